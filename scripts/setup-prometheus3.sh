#!/usr/bin/env bash
# Prometheus 3 and its promtool, built from the Go module proxy (Debian ships only 2.42 and users
# run 3.x). Pinned, idempotent: it does nothing when the cached binaries already report the pinned
# version. Cold (nothing in the Go caches) the build takes a few minutes on 2 cores; warm, a second.
#
#   PROMETHEUS3_BIN_DIR  where the binaries go (default: ${XDG_CACHE_HOME:-$HOME/.cache}/hypha-serve-exporter/
#                        prometheus-v0.316.0/bin — a cache dir CI machines keep between runs;
#                        test/harness/prometheus-versions.ts looks in the same place)
#   GO                   the go command (default: go on PATH, else /usr/local/go/bin/go)
set -euo pipefail

MODULE=github.com/prometheus/prometheus
MODULE_VERSION=v0.316.0 # module v0.3XX.Y is Prometheus 3.XX.Y
VERSION=3.16.0
BIN_DIR="${PROMETHEUS3_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hypha-serve-exporter/prometheus-$MODULE_VERSION/bin}"

# For the test harness's agreement check (test/unit/prometheus-versions.test.ts).
if [ "${1:-}" = --print-bin-dir ]; then echo "$BIN_DIR"; exit 0; fi

SETUP_NAME=setup-prometheus3
# shellcheck source=scripts/lib/setup-build.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/setup-build.sh"

# `prometheus --version` prints "prometheus, version 3.16.0 (branch: ...". The version is stamped
# at link time (-X below); a plain `go install` leaves it empty, so an unstamped build is redone.
up_to_date() {
  has_version "$BIN_DIR/prometheus" --version "version $VERSION " && has_version "$BIN_DIR/promtool" --version "version $VERSION "
}

if up_to_date; then
  say "Prometheus $VERSION and promtool already in $BIN_DIR ($(elapsed))"
  exit 0
fi

require_go "Prometheus $VERSION is" "Install Go (go.dev/dl, or the distribution's golang package if it is recent enough for $MODULE@$MODULE_VERSION) and re-run, or set GO=/path/to/go." SETUP_PROMETHEUS3

mkdir -p "$BIN_DIR"
build_lock "$BIN_DIR/../.build.lock" up_to_date

# Build into a scratch dir and move into place, so an interrupted build never leaves a binary
# that passes the check above.
tmp_bin="$(mktemp -d "$BIN_DIR/../bin.tmp.XXXXXX")"
trap 'rm -rf "$tmp_bin"' EXIT
say "building Prometheus $VERSION and promtool ($MODULE@$MODULE_VERSION) with $("$GO" version | cut -d' ' -f3); cold: ~3-5 min on 2 cores"
ldflags="$(stamp_ldflags "$VERSION" "module-$MODULE_VERSION")"
# Both commands in one `go install`: one module resolution and one shared compile of the
# packages they have in common (most of them). remove_all_sd (Prometheus >= 3.10) leaves out the
# bundled service-discovery providers, whose cloud SDKs are most of a cold build; the tests and
# every configuration shipped here use static and file targets only, which stay built in.
GOFLAGS=-mod=mod GOBIN="$tmp_bin" "$GO" install -tags remove_all_sd -ldflags "$ldflags" \
  "$MODULE/cmd/prometheus@$MODULE_VERSION" "$MODULE/cmd/promtool@$MODULE_VERSION"
mv -f "$tmp_bin/prometheus" "$tmp_bin/promtool" "$BIN_DIR/"
if ! up_to_date; then
  echo "[setup-prometheus3] ERROR: built binaries do not report version $VERSION:" >&2
  "$BIN_DIR/prometheus" --version >&2 || true
  exit 1
fi
say "Prometheus $VERSION and promtool built into $BIN_DIR in $(elapsed)"

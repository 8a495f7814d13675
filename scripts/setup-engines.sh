#!/usr/bin/env bash
# The other rule engines and Alertmanager the rules pack is proven on (issue 25), built from the Go
# module proxy: Thanos (sidecar, query, rule), VictoriaMetrics (single node, vmalert, vmalert-tool),
# Alertmanager 0.35 with amtool (Debian ships 0.25) and the Prometheus Operator (issue 38: the chart's
# ServiceMonitor and PrometheusRule rendered by the real operator). Pinned, idempotent: each engine is skipped
# when its cached binaries already report the pinned version, so a warm run takes about a second.
# Cold, the four builds run side by side at low priority (nice) and take a few minutes on 2 cores.
#
#   ENGINES_CACHE_DIR  parent of the per-engine dirs (default: ${XDG_CACHE_HOME:-$HOME/.cache}/hypha-serve-exporter,
#                      the cache dir CI keeps between runs; test/harness/engines.ts looks in the same place):
#                      thanos-v0.42.4/bin, victoriametrics-v1.151.0/bin, alertmanager-v0.35.0/bin,
#                      prometheus-operator-v0.85.0/bin (and its crds/, the CRDs of the same module)
#   GO                 the go command (default: go on PATH, else /usr/local/go/bin/go)
#   --print-bin-dirs   prints "name dir" per engine and exits (for the harness's agreement check)
set -euo pipefail

THANOS_VERSION=v0.42.4        # v0.42.5 needs go >= 1.26.10
VM_VERSION=v1.151.0           # versions after v1.153.0 need a newer Go
ALERTMANAGER_VERSION=v0.35.0
PROMETHEUS_OPERATOR_VERSION=v0.85.0  # the CRDs of scripts/install-deploy-tools.sh are of this version too
CACHE="${ENGINES_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hypha-serve-exporter}"
THANOS_BIN="$CACHE/thanos-$THANOS_VERSION/bin"
VM_BIN="$CACHE/victoriametrics-$VM_VERSION/bin"
AM_BIN="$CACHE/alertmanager-$ALERTMANAGER_VERSION/bin"
OPERATOR_DIR="$CACHE/prometheus-operator-$PROMETHEUS_OPERATOR_VERSION"

if [ "${1:-}" = --print-bin-dirs ]; then
  printf 'thanos %s\nvictoriametrics %s\nalertmanager %s\nprometheus-operator %s\n' "$THANOS_BIN" "$VM_BIN" "$AM_BIN" "$OPERATOR_DIR/bin"
  exit 0
fi

SETUP_NAME=setup-engines
# shellcheck source=scripts/lib/setup-build.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/setup-build.sh"

# Each binary's version is stamped at link time (-X below); an unstamped or older build is redone
# (has_version, scripts/lib/setup-build.sh, reads the first line of the version output).
# prometheus/common/version (Thanos, Alertmanager, amtool): "thanos, version 0.42.4 (branch: ...".
# VictoriaMetrics' lib/buildinfo prints the stamped string as is (vmalert-tool: "vmalert-tool version v1.151.0").
# Thanos must be built with its release tags (.promu.yml: netgo, slicelabels): it relies on the slice
# layout of Prometheus' labels.Labels, and without the tag `thanos query` panics (index out of range in
# endpointset labelSets) at its first store. The tags are stamped into the branch field and checked.
THANOS_TAGS=netgo,slicelabels
thanos_ok() { has_version "$THANOS_BIN/thanos" --version "version ${THANOS_VERSION#v} (branch: module-$THANOS_VERSION+$THANOS_TAGS,"; }
vm_ok() {
  has_version "$VM_BIN/victoria-metrics" -version "^$VM_VERSION\$" && has_version "$VM_BIN/vmalert" -version "^$VM_VERSION\$" &&
    has_version "$VM_BIN/vmalert-tool" --version " $VM_VERSION\$"
}
am_ok() {
  has_version "$AM_BIN/alertmanager" --version "version ${ALERTMANAGER_VERSION#v} " &&
    has_version "$AM_BIN/amtool" --version "version ${ALERTMANAGER_VERSION#v} "
}
# The operator prints "prometheus-operator, version 0.85.0 (branch: ..." (prometheus/common/version);
# its CRDs are copied beside it in the same step, so one check covers both.
operator_ok() {
  has_version "$OPERATOR_DIR/bin/operator" --version "version ${PROMETHEUS_OPERATOR_VERSION#v} (branch: module-$PROMETHEUS_OPERATOR_VERSION," &&
    [ -f "$OPERATOR_DIR/crds/monitoring.coreos.com_alertmanagerconfigs.yaml" ]
}
all_ok() { thanos_ok && vm_ok && am_ok && operator_ok; }

if all_ok; then
  say "Thanos $THANOS_VERSION, VictoriaMetrics $VM_VERSION, Alertmanager $ALERTMANAGER_VERSION, Prometheus Operator $PROMETHEUS_OPERATOR_VERSION already in $CACHE ($(elapsed))"
  exit 0
fi

require_go "Thanos, VictoriaMetrics, Alertmanager $ALERTMANAGER_VERSION and the Prometheus Operator are" "Install Go >= 1.26.6 and re-run, or set GO=/path/to/go." SETUP_ENGINES

mkdir -p "$CACHE"
build_lock "$CACHE/.engines-build.lock" all_ok

scratch="$(mktemp -d "$CACHE/engines.tmp.XXXXXX")"
trap 'chmod -R u+w "$scratch" 2>/dev/null; rm -rf "$scratch"' EXIT
gover="$("$GO" version | cut -d' ' -f3)"
# A module's source from the proxy, as a writable tree (the module cache is read-only).
module_source() { # module version dest
  local dir
  dir="$(nice -n 10 "$GO" mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [ -d "$dir" ] || { echo "[setup-engines] ERROR: go mod download $1@$2 gave no source dir" >&2; return 1; }
  # A nested module's parent may be missing too: the outer module's zip leaves out every nested module's files.
  mkdir -p "$(dirname "$3")"
  cp -r "$dir" "$3"
  chmod -R u+w "$3"
}

# Binaries are built into a scratch dir and moved into place, so an interrupted build never leaves
# one that passes the checks above.
build_thanos() {
  thanos_ok && return 0
  say "Thanos $THANOS_VERSION: building from its module source (go.mod has replace directives, so go install is refused); cold ~3 min"
  module_source github.com/thanos-io/thanos "$THANOS_VERSION" "$scratch/thanos-src"
  (cd "$scratch/thanos-src" && nice -n 10 "$GO" build -tags "$THANOS_TAGS" -ldflags "$(stamp_ldflags "${THANOS_VERSION#v}" "module-$THANOS_VERSION+$THANOS_TAGS")" -o "$scratch/thanos" ./cmd/thanos)
  mkdir -p "$THANOS_BIN"
  mv -f "$scratch/thanos" "$THANOS_BIN/"
  thanos_ok || { echo "[setup-engines] ERROR: $THANOS_BIN/thanos does not report ${THANOS_VERSION#v}" >&2; return 1; }
  say "Thanos $THANOS_VERSION built ($(elapsed))"
}

build_vm() {
  vm_ok && return 0
  say "VictoriaMetrics $VM_VERSION: victoria-metrics, vmalert, vmalert-tool in one go install; cold ~2 min"
  local m=github.com/VictoriaMetrics/VictoriaMetrics
  mkdir -p "$scratch/vm"
  # One invocation: one module resolution, and the packages the three share (most of lib/) compile once.
  GOBIN="$scratch/vm" nice -n 10 "$GO" install -ldflags "-X $m/lib/buildinfo.Version=$VM_VERSION" \
    "$m/app/victoria-metrics@$VM_VERSION" "$m/app/vmalert@$VM_VERSION" "$m/app/vmalert-tool@$VM_VERSION"
  mkdir -p "$VM_BIN"
  mv -f "$scratch/vm/victoria-metrics" "$scratch/vm/vmalert" "$scratch/vm/vmalert-tool" "$VM_BIN/"
  vm_ok || { echo "[setup-engines] ERROR: $VM_BIN binaries do not report $VM_VERSION" >&2; return 1; }
  say "VictoriaMetrics $VM_VERSION built ($(elapsed))"
}

build_alertmanager() {
  am_ok && return 0
  say "Alertmanager $ALERTMANAGER_VERSION and amtool: building from the module source; cold ~2 min"
  local src="$scratch/alertmanager-src"
  module_source github.com/prometheus/alertmanager "$ALERTMANAGER_VERSION" "$src"
  # ui/web.go embeds app/dist, the web UI bundle, which the module does not ship (it is built with
  # npm at release time). One placeholder file satisfies the embed; the server then has no web UI,
  # its API (/api/v2/...) is complete.
  mkdir -p "$src/ui/app/dist"
  printf '<!doctype html><title>Alertmanager</title><p>Web UI not built (hypha-serve-exporter test build).</p>\n' >"$src/ui/app/dist/index.html"
  # amtool from the same tree in the same invocation (the same module and version as
  # `go install .../cmd/amtool@v0.35.0` would fetch): its packages are compiled once for both.
  # -mod=mod: go may complete go.mod/go.sum of the copy if it needs to (it is a scratch copy).
  mkdir -p "$scratch/am"
  (cd "$src" && GOFLAGS="${GOFLAGS:-} -mod=mod" nice -n 10 "$GO" build -tags netgo -ldflags "$(stamp_ldflags "${ALERTMANAGER_VERSION#v}" "module-$ALERTMANAGER_VERSION")" \
    -o "$scratch/am/" ./cmd/alertmanager ./cmd/amtool)
  mkdir -p "$AM_BIN"
  mv -f "$scratch/am/alertmanager" "$scratch/am/amtool" "$AM_BIN/"
  am_ok || { echo "[setup-engines] ERROR: $AM_BIN binaries do not report ${ALERTMANAGER_VERSION#v}" >&2; return 1; }
  say "Alertmanager $ALERTMANAGER_VERSION and amtool built ($(elapsed))"
}

build_operator() {
  operator_ok && return 0
  say "Prometheus Operator $PROMETHEUS_OPERATOR_VERSION: building from its module source (go.mod has replace directives, so go install is refused); cold ~4 min"
  local src="$scratch/operator-src" m=github.com/prometheus-operator/prometheus-operator sub
  module_source "$m" "$PROMETHEUS_OPERATOR_VERSION" "$src"
  # The replace directives point at ./pkg/apis/monitoring and ./pkg/client, nested modules that the
  # main module's zip leaves out: each comes from the proxy as its own module of the same version.
  for sub in pkg/apis/monitoring pkg/client; do
    rm -rf "${src:?}/$sub"
    module_source "$m/$sub" "$PROMETHEUS_OPERATOR_VERSION" "$src/$sub"
  done
  (cd "$src" && nice -n 10 "$GO" build -ldflags "$(stamp_ldflags "${PROMETHEUS_OPERATOR_VERSION#v}" "module-$PROMETHEUS_OPERATOR_VERSION")" \
    -o "$scratch/operator" ./cmd/operator)
  mkdir -p "$OPERATOR_DIR/bin" "$OPERATOR_DIR/crds"
  cp "$src"/example/prometheus-operator-crd/*.yaml "$OPERATOR_DIR/crds/"
  mv -f "$scratch/operator" "$OPERATOR_DIR/bin/"
  operator_ok || { echo "[setup-engines] ERROR: $OPERATOR_DIR/bin/operator does not report ${PROMETHEUS_OPERATOR_VERSION#v}" >&2; return 1; }
  say "Prometheus Operator $PROMETHEUS_OPERATOR_VERSION built ($(elapsed))"
}

say "building with $gover into $CACHE (the four side by side, nice 10)"
# Side by side: downloads (network) overlap with compiles (CPU), and each build's single-threaded
# link step leaves a core for the others.
pids=()
build_thanos & pids+=($!)
build_vm & pids+=($!)
build_alertmanager & pids+=($!)
build_operator & pids+=($!)
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=1; done
if [ "$failed" = 1 ] || ! all_ok; then
  echo "[setup-engines] ERROR: an engine build failed (see above)" >&2
  exit 1
fi
say "Thanos $THANOS_VERSION, VictoriaMetrics $VM_VERSION, Alertmanager $ALERTMANAGER_VERSION, Prometheus Operator $PROMETHEUS_OPERATOR_VERSION ready in $CACHE ($(elapsed))"

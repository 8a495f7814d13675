# shellcheck shell=bash
# What scripts/setup-engines.sh and scripts/setup-prometheus3.sh share: logging, the version check
# of a cached binary, finding Go, the build lock and the version stamp. Sourced after `set -euo
# pipefail` with SETUP_NAME set (the log prefix, e.g. "setup-engines").

say() { printf '[%s %s] %s\n' "$SETUP_NAME" "$(date +%H:%M:%S)" "$*"; }
SETUP_STARTED=$(date +%s)
elapsed() { echo "$(($(date +%s) - SETUP_STARTED))s"; }

# True when the binary runs and the first line of `binary version-flag` matches the grep pattern.
# The first line is read with sed, which reads to the end: with `| head -n1 | grep -q` the binary
# may die of SIGPIPE while printing its later lines (and grep -q closes early too), and under
# pipefail the pipeline then fails, so a good build would count as missing and be rebuilt.
has_version() { # binary version-flag pattern
  [ -x "$1" ] || return 1
  local first
  first="$("$1" "$2" 2>&1 | sed -n 1p)" || true
  grep -q -- "$3" <<<"$first"
}

# Sets GO ($GO, else go on PATH, else /usr/local/go/bin/go) or says why there is none and exits 1.
require_go() { # what-is-built-from-source install-advice setup-switch
  GO="${GO:-$(command -v go || true)}"
  if [ -z "$GO" ] && [ -x /usr/local/go/bin/go ]; then GO=/usr/local/go/bin/go; fi
  if [ -z "$GO" ] || ! "$GO" version >/dev/null 2>&1; then
    cat >&2 <<MSG
[$SETUP_NAME] ERROR: Go is not installed${GO:+ (GO=$GO does not run)}; $1 built from source.
  $2
  To set up without this build (local runs only; CI requires it): $3=0 bash scripts/setup.sh
MSG
    exit 1
  fi
}

# Two setups started at once (CI matrix, a developer's second terminal) build once: holds an
# exclusive lock on the file (fd 9) for the rest of the script; when another run holds it, waits
# for it and exits 0 if the check command then passes.
build_lock() { # lock-file check-command
  exec 9>"$1"
  if ! flock -n 9; then
    say "another build holds $1; waiting for it"
    flock 9
    if "$2"; then
      say "built by the other run ($(elapsed))"
      exit 0
    fi
  fi
}

# -ldflags stamping prometheus/common/version (Prometheus, Thanos, Alertmanager): what --version
# reports, checked by has_version on the next run.
stamp_ldflags() { # version branch
  echo "-X github.com/prometheus/common/version.Version=$1 -X github.com/prometheus/common/version.Branch=$2" \
    "-X github.com/prometheus/common/version.BuildUser=hypha-serve-exporter-setup"
}

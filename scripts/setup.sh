#!/usr/bin/env bash
# Idempotent setup: everything the demo and the test suite need, pinned.
# Re-running it on a machine that already has everything takes a few seconds.
# SETUP_PROMETHEUS3=0 skips the Prometheus 3 build (local runs; tests then use only Debian's 2.42).
# SETUP_ENGINES=0 skips Thanos, VictoriaMetrics and Alertmanager 0.35 (scripts/setup-engines.sh;
# local runs: tests then leave those engines out, except in CI, which requires them).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
step() { printf '[setup %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3

apt_pkgs=(prometheus prometheus-alertmanager openssl)
[ "${SETUP_BROWSER:-1}" = 1 ] && apt_pkgs+=(chromium)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  step "apt-get install ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  # The Debian prometheus packages start system services on install; we only want the binaries.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  for svc in prometheus prometheus-alertmanager prometheus-node-exporter; do
    $SUDO systemctl stop "$svc" >/dev/null 2>&1 || true
    $SUDO pkill -f "^/usr/bin/$svc" >/dev/null 2>&1 || true
  done
fi

make_venv() { # name requirements-file
  local dir=".venv/$1" req="$2" stamp
  stamp="$dir/.req-$(sha1sum "$req" | cut -c1-12)"
  [ -f "$stamp" ] && return 0
  step "python venv $dir from $req (first time: a few minutes)"
  rm -rf "$dir"
  "$PY" -m venv "$dir"
  "$dir/bin/pip" install -q --disable-pip-version-check -r "$req"
  touch "$stamp"
}
# Prometheus 3 builds from source (CPU-bound) while the venvs download (network-bound).
prom3_pid=""
if [ "${SETUP_PROMETHEUS3:-1}" = 1 ]; then
  bash scripts/setup-prometheus3.sh &
  prom3_pid=$!
fi
# Thanos, VictoriaMetrics and Alertmanager 0.35 (issue 25's other engines) build beside it; SETUP_ENGINES=0 skips them.
engines_pid=""; [ "${SETUP_ENGINES:-1}" = 1 ] && { bash scripts/setup-engines.sh & engines_pid=$!; }
# Hypha and Ray pin conflicting web frameworks; each gets its own venv.
make_venv ray scripts/requirements-ray.txt &
p1=$!
make_venv hypha scripts/requirements-hypha.txt &
p2=$!
make_venv s3 scripts/requirements-s3.txt &
p3=$!
wait $p1; wait $p2; wait $p3
if [ -n "$prom3_pid" ] && ! wait "$prom3_pid"; then
  echo "[setup] Prometheus 3 build failed (see above)" >&2
  exit 1
fi
[ -z "$engines_pid" ] || wait "$engines_pid" || { echo "[setup] engine builds failed (see above)" >&2; exit 1; }

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  step "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi
step "build"
npx tsc -p tsconfig.json
# helm, kustomize, kube-apiserver + kubectl (Go builds, cold ~10 min on 2 cores), etcd, kubernetes-validate, the
# Prometheus Operator CRDs for the install-kubernetes*.test.ts files: built here, not inside a test's time limit.
# SETUP_DEPLOY_TOOLS=0 skips them (those tests then build them on first use).
[ "${SETUP_DEPLOY_TOOLS:-1}" = 1 ] && bash scripts/install-deploy-tools.sh
step "ready"

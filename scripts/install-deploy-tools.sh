#!/usr/bin/env bash
# Idempotent, pinned install of the tools that check the Kubernetes artifacts offline:
# helm, kustomize (built from the Go module proxy: no GitHub downloads reach this kind of host),
# kubernetes-validate (its own venv) and the Prometheus Operator CRDs (from the operator's Go module).
# Prints nothing but step lines; a second run on a machine that has everything takes under a second.
#   bash scripts/install-deploy-tools.sh                  everything
#   bash scripts/install-deploy-tools.sh --systemd-only   only systemd-analyze
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
step() { printf '[deploy-tools %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

HELM_VERSION=v3.22.0
KUSTOMIZE_VERSION=v5.8.2
KUBERNETES_VALIDATE_VERSION=1.37.0
PROMETHEUS_OPERATOR_VERSION=v0.85.0

cache="${HSE_CACHE_DIR:-$HOME/.cache/hypha-serve-exporter}/deploy-tools"
mkdir -p "$cache"
command -v go >/dev/null 2>&1 || export PATH="/usr/local/go/bin:$PATH"

# systemd-analyze checks the unit (test/integration/install-systemd.test.ts); minimal images lack it.
if ! command -v systemd-analyze >/dev/null 2>&1; then
  step "apt-get install systemd (for systemd-analyze)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO flock /tmp/hypha-serve-exporter-apt.lock apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO flock /tmp/hypha-serve-exporter-apt.lock apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends systemd >/dev/null
fi

[ "${1:-}" = --systemd-only ] && exit 0

go_tool() { # name module version
  local name="$1" module="$2" version="$3" dir="$cache/$1-$3"
  [ -x "$dir/bin/$name" ] && return 0
  command -v go >/dev/null 2>&1 || { echo "go is needed to build $name $version" >&2; return 1; }
  step "go install $module@$version (first time: about 1-2 min)"
  rm -rf "$dir.tmp"
  GOBIN="$dir.tmp/bin" GOFLAGS=-mod=mod go install "$module@$version" 2> >(grep -v '^go: downloading' >&2)
  mv "$dir.tmp" "$dir"
}
go_tool helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION" &
p1=$!
go_tool kustomize sigs.k8s.io/kustomize/kustomize/v5 "$KUSTOMIZE_VERSION" &
p2=$!

venv=".venv/k8s-validate"
stamp="$venv/.kubernetes-validate-$KUBERNETES_VALIDATE_VERSION"
if [ ! -f "$stamp" ]; then
  step "python venv $venv with kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
  rm -rf "$venv"
  PY="${PYTHON:-python3.11}"; command -v "$PY" >/dev/null 2>&1 || PY=python3
  "$PY" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
  touch "$stamp"
fi

crds="$cache/prometheus-operator-crds-$PROMETHEUS_OPERATOR_VERSION"
if [ ! -f "$crds/.done" ]; then
  step "Prometheus Operator $PROMETHEUS_OPERATOR_VERSION CRDs from the Go module proxy"
  moddir="$(cd "$cache" && GOFLAGS=-mod=mod go mod download -json "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION" \
    | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).Dir))')"
  mkdir -p "$crds"
  cp "$moddir"/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml \
     "$moddir"/example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml "$crds/"
  chmod u+w "$crds"/*.yaml
  touch "$crds/.done"
fi

wait $p1
wait $p2
cat > "$cache/env.sh" <<ENV
# sourced by scripts/check-deploy.sh
HELM="$cache/helm-$HELM_VERSION/bin/helm"
KUSTOMIZE="$cache/kustomize-$KUSTOMIZE_VERSION/bin/kustomize"
KUBERNETES_VALIDATE="$root/$venv/bin/kubernetes-validate"
PROMETHEUS_OPERATOR_CRDS="$crds"
ENV
step "ready ($cache)"

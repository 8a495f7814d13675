#!/usr/bin/env bash
# Idempotent, pinned install of the tools that check the Kubernetes artifacts offline:
# helm, kustomize (built from the Go module proxy: no GitHub downloads reach this kind of host),
# kubernetes-validate (its own venv), the Prometheus Operator CRDs (from the operator's Go module), and a
# real kube-apiserver + kubectl (built from k8s.io/kubernetes, pinned) with Debian's etcd-server, which
# test/integration/install-kubernetes.test.ts applies the chart and the kustomize base to.
# Prints nothing but step lines; a second run on a machine that has everything takes under a second.
#   bash scripts/install-deploy-tools.sh                  everything
#   bash scripts/install-deploy-tools.sh --systemd-only   only systemd-analyze
#   bash scripts/install-deploy-tools.sh --actionlint-only   systemd-analyze, actionlint and shellcheck
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
step() { printf '[deploy-tools %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

HELM_VERSION=v3.22.0
KUSTOMIZE_VERSION=v5.8.2
KUBERNETES_VALIDATE_VERSION=1.37.0
PROMETHEUS_OPERATOR_VERSION=v0.85.0
ACTIONLINT_VERSION=v1.7.12
K8S_VERSION=v1.33.5
K8S_STAGING_VERSION=v0.33.5

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
# actionlint checks .github/workflows (test/integration/release-workflow.test.ts, ci.yml), and their run:
# scripts too when Debian's shellcheck is installed. Paths in $cache/actionlint.env.
if ! command -v shellcheck >/dev/null 2>&1; then
  step "apt-get install shellcheck (for actionlint)"
  sudo_al=""; [ "$(id -u)" = 0 ] || sudo_al="sudo"
  $sudo_al flock /tmp/hypha-serve-exporter-apt.lock apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_al flock /tmp/hypha-serve-exporter-apt.lock apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends shellcheck >/dev/null
fi
go_tool actionlint github.com/rhysd/actionlint/cmd/actionlint "$ACTIONLINT_VERSION"
printf 'ACTIONLINT="%s"\nSHELLCHECK="%s"\n' "$cache/actionlint-$ACTIONLINT_VERSION/bin/actionlint" "$(command -v shellcheck)" >"$cache/actionlint.env"
[ "${1:-}" = --actionlint-only ] && exit 0
# One full install at a time: two test files may call this together, and the builds share their directories.
exec 9>"$cache/.install.lock"
flock 9
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
if ! command -v etcd >/dev/null 2>&1; then
  step "apt-get install etcd-server (for the kube-apiserver check)"
  $SUDO flock /tmp/hypha-serve-exporter-apt.lock apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO flock /tmp/hypha-serve-exporter-apt.lock apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends etcd-server >/dev/null
  # Debian starts an etcd service on install; the checks run their own on loopback ports.
  $SUDO systemctl disable --now etcd >/dev/null 2>&1 || true
fi

kube_tools() { # kube-apiserver + kubectl, built once into $cache/kubernetes-$K8S_VERSION/bin
  local bin="$cache/kubernetes-$K8S_VERSION/bin" w="$cache/kubernetes-$K8S_VERSION.build" gomod
  [ -x "$bin/kubectl" ] && [ "$("$bin/kube-apiserver" --version 2>/dev/null)" = "Kubernetes $K8S_VERSION" ] && return 0
  # `go install k8s.io/kubernetes/...@v` fails on the replace directives of its go.mod (staging modules);
  # a wrapper module that replaces each staging module by its published version builds.
  step "building kube-apiserver and kubectl $K8S_VERSION (first time: 5-15 min, ~3 GB Go caches)"
  rm -rf "$w"; mkdir -p "$w"
  gomod="$(cd "$w" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" \
    | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).GoMod))')"
  {
    echo "module hse.local/kube-tools"
    echo "go 1.24"
    echo "require k8s.io/kubernetes $K8S_VERSION"
    grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging/' "$gomod" | awk -v v="$K8S_STAGING_VERSION" '{print "replace " $1 " => " $1 " " v}'
  } >"$w/go.mod"
  cat >"$w/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
  (cd "$w" && GOFLAGS=-mod=mod go mod tidy -e >/dev/null 2>&1 || true)
  rm -rf "$bin.tmp"
  # The version stamp the release build sets: without it the server reports v0.0.0-master and Helm refuses
  # charts with a kubeVersion constraint.
  local minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  local ldflags="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1"
  ldflags="$ldflags -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
  ldflags="$ldflags -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1"
  ldflags="$ldflags -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  (cd "$w" && GOFLAGS=-mod=mod go build -tags tools -ldflags "$ldflags" -o "$bin.tmp/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl) \
    2> >(grep -v '^go: downloading' >&2)
  mkdir -p "$(dirname "$bin")"; rm -rf "$bin"; mv "$bin.tmp" "$bin"; rm -rf "$w"
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

# The Prometheus Operator module's source directory (downloaded once into the Go module cache): its CRDs.
operator_module_dir() {
  (cd "$cache" && GOFLAGS=-mod=mod go mod download -json "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION" \
    | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).Dir))')
}

crds="$cache/prometheus-operator-crds-$PROMETHEUS_OPERATOR_VERSION"
if [ ! -f "$crds/.done" ]; then
  step "Prometheus Operator $PROMETHEUS_OPERATOR_VERSION CRDs from the Go module proxy"
  moddir="$(operator_module_dir)"
  mkdir -p "$crds"
  cp "$moddir"/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml \
     "$moddir"/example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml "$crds/"
  chmod u+w "$crds"/*.yaml
  touch "$crds/.done"
fi
# The AlertmanagerConfig CRD, apart (check-deploy.sh validates every CRD of the directory above): it checks
# examples/alertmanagerconfig.yaml (test/unit/alertmanagerconfig.test.ts).
amc_crd="$cache/prometheus-operator-alertmanagerconfig-crd-$PROMETHEUS_OPERATOR_VERSION"
if [ ! -f "$amc_crd/.done" ]; then
  step "Prometheus Operator $PROMETHEUS_OPERATOR_VERSION AlertmanagerConfig CRD from the Go module proxy"
  moddir="$(operator_module_dir)"
  mkdir -p "$amc_crd"
  cp "$moddir"/example/prometheus-operator-crd/monitoring.coreos.com_alertmanagerconfigs.yaml "$amc_crd/"
  chmod u+w "$amc_crd"/*.yaml
  touch "$amc_crd/.done"
fi

wait $p1
wait $p2
# After helm and kustomize: on 2 cores the three Go builds side by side would only thrash.
kube_tools
cat > "$cache/env.sh" <<ENV
# sourced by scripts/check-deploy.sh
HELM="$cache/helm-$HELM_VERSION/bin/helm"
KUSTOMIZE="$cache/kustomize-$KUSTOMIZE_VERSION/bin/kustomize"
KUBERNETES_VALIDATE="$root/$venv/bin/kubernetes-validate"
PROMETHEUS_OPERATOR_CRDS="$crds"
KUBE_APISERVER="$cache/kubernetes-$K8S_VERSION/bin/kube-apiserver"
KUBECTL="$cache/kubernetes-$K8S_VERSION/bin/kubectl"
ETCD="$(command -v etcd)"
ENV
step "ready ($cache)"

#!/usr/bin/env bash
# OPT-IN, not part of scripts/test.sh: the strongest offline check of the Kubernetes artifacts.
# Starts a real kube-apiserver (built from k8s.io/kubernetes, pinned) on etcd (Debian's etcd-server) on
# loopback, installs the Prometheus Operator CRDs, and runs `kubectl apply --dry-run=server --validate=strict`
# on everything scripts/check-deploy.sh rendered, plus known-bad manifests that must be rejected.
# No controller-manager, scheduler or kubelet: objects are admitted, defaulted and validated, never run.
# Cost: first run ~7 min on 2 busy cores (Go build of kube-apiserver + kubectl, ~3 GB Go caches,
# ~2 GB RAM peak; binaries 241 MB); later runs ~11 s.
#   bash scripts/check-deploy-apiserver.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
step() { printf '[apiserver %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
K8S_VERSION=v1.33.5
STAGING_VERSION=v0.33.5
cache="${HSE_CACHE_DIR:-$HOME/.cache/hypha-serve-exporter}/deploy-tools"
bin="$cache/kubernetes-$K8S_VERSION/bin"
command -v go >/dev/null 2>&1 || export PATH="/usr/local/go/bin:$PATH"
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"

if ! command -v etcd >/dev/null 2>&1; then
  step "apt-get install etcd-server"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends etcd-server >/dev/null
  # Debian starts an etcd service on install; this check runs its own.
  $SUDO systemctl disable --now etcd >/dev/null 2>&1 || true
fi

if [ ! -x "$bin/kube-apiserver" ] || [ ! -x "$bin/kubectl" ]; then
  # `go install k8s.io/kubernetes/...@v` fails on the replace directives of its go.mod (staging modules);
  # a wrapper module that replaces each staging module by its published version builds.
  step "building kube-apiserver and kubectl $K8S_VERSION (first time: 5-15 min)"
  w="$cache/kubernetes-$K8S_VERSION.build"
  rm -rf "$w"; mkdir -p "$w"
  gomod="$(cd "$w" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" \
    | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).GoMod))')"
  {
    echo "module hse.local/kube-tools"
    echo "go 1.24"
    echo "require k8s.io/kubernetes $K8S_VERSION"
    grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging/' "$gomod" | awk -v v="$STAGING_VERSION" '{print "replace " $1 " => " $1 " " v}'
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
  (cd "$w" && GOFLAGS=-mod=mod go build -tags tools -o "$bin.tmp/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl)
  mkdir -p "$(dirname "$bin")"; rm -rf "$bin"; mv "$bin.tmp" "$bin"; rm -rf "$w"
fi

out="${DEPLOY_OUT:-test-artifacts/deploy}"
[ -f "$out/kustomize-base.yaml" ] || bash scripts/check-deploy.sh >/dev/null
# shellcheck disable=SC1091
. "$cache/env.sh"

run="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$run"
}
trap cleanup EXIT
read -r -a ports <<<"$(node -e 'const net=require("net");const s=[];let n=0;for(let i=0;i<3;i++){const x=net.createServer();x.listen(0,"127.0.0.1",()=>{s.push(x);if(++n===3){console.log(s.map(y=>y.address().port).join(" "));s.forEach(y=>y.close())}})}')"
etcd_client=${ports[0]} etcd_peer=${ports[1]} api=${ports[2]}

step "etcd on 127.0.0.1:$etcd_client"
etcd --data-dir "$run/etcd" --listen-client-urls "http://127.0.0.1:$etcd_client" --advertise-client-urls "http://127.0.0.1:$etcd_client" \
  --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
  --initial-cluster "default=http://127.0.0.1:$etcd_peer" >"$run/etcd.log" 2>&1 &
pids+=($!)

openssl genrsa -out "$run/sa.key" 2048 2>/dev/null
openssl rsa -in "$run/sa.key" -pubout -out "$run/sa.pub" 2>/dev/null
token="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
echo "$token,admin,admin,system:masters" >"$run/tokens.csv"
step "kube-apiserver $K8S_VERSION on 127.0.0.1:$api"
"$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_client" --bind-address 127.0.0.1 --advertise-address 127.0.0.1 \
  --secure-port "$api" --cert-dir "$run/certs" --token-auth-file "$run/tokens.csv" --authorization-mode AlwaysAllow \
  --service-account-key-file "$run/sa.pub" --service-account-signing-key-file "$run/sa.key" \
  --service-account-issuer https://kubernetes.default.svc --service-cluster-ip-range 10.96.0.0/16 >"$run/apiserver.log" 2>&1 &
pids+=($!)

cat >"$run/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "https://127.0.0.1:$api", insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: "$token"}}]
contexts: [{name: local, context: {cluster: local, user: admin}}]
current-context: local
KC
k() { "$bin/kubectl" --kubeconfig "$run/kubeconfig" "$@"; }
for i in $(seq 1 120); do
  k get --raw /readyz >/dev/null 2>&1 && break
  [ "$i" = 120 ] && { echo "kube-apiserver did not become ready"; tail -20 "$run/apiserver.log"; exit 1; }
  sleep 1
done
step "apiserver ready; installing Prometheus Operator CRDs"
k apply --server-side -f "$PROMETHEUS_OPERATOR_CRDS" >/dev/null
k wait --for condition=established --timeout=60s crd/servicemonitors.monitoring.coreos.com crd/prometheusrules.monitoring.coreos.com >/dev/null
k create namespace monitoring >/dev/null
k -n monitoring create serviceaccount default >/dev/null

rc=0
for f in "$out"/helm-default-1.33.0.yaml "$out"/helm-ha-1.33.0.yaml "$out"/kustomize-base.yaml "$out"/kustomize-ha.yaml; do
  if k -n monitoring apply --dry-run=server --validate=strict -f "$f" >"$run/apply.log" 2>&1; then
    step "accepted: $f ($(wc -l <"$run/apply.log") objects)"
  else
    echo "REJECTED: $f"; cat "$run/apply.log"; rc=1
  fi
done

# Known-bad: an unknown field in a Deployment, and one in a ServiceMonitor (a CRD: strict field validation).
mutate() { # kind field newfield out: rename a field of the first container/endpoint of that kind
  node -e '
    const fs = require("fs"); const YAML = require("yaml");
    const [src, kind, from, to, dst] = process.argv.slice(1);
    let changed = 0;
    const docs = YAML.parseAllDocuments(fs.readFileSync(src, "utf8")).map((d) => d.toJS()).filter(Boolean);
    for (const o of docs) {
      if (o.kind !== kind) continue;
      const t = kind === "Deployment" ? o.spec.template.spec.containers[0] : o.spec.endpoints[0];
      t[to] = t[from]; delete t[from]; changed++;
    }
    if (!changed) { console.error("no " + kind + " to break"); process.exit(1); }
    fs.writeFileSync(dst, docs.map((d) => YAML.stringify(d)).join("---\n"));
  ' "$out/kustomize-base.yaml" "$@"
}
mutate Deployment imagePullPolicy imagePullPolicyy "$run/bad-deployment.yaml"
mutate ServiceMonitor interval intervall "$run/bad-servicemonitor.yaml"
for bad in bad-deployment bad-servicemonitor; do
  if k -n monitoring apply --dry-run=server --validate=strict -f "$run/$bad.yaml" >"$run/apply.log" 2>&1; then
    echo "NOT REJECTED: $bad"; rc=1
  else
    step "rejected as expected: $bad: $(grep -m1 -o 'unknown field[^,]*' "$run/apply.log" || head -1 "$run/apply.log")"
  fi
done
[ $rc = 0 ] && echo "apiserver dry-run OK: kube-apiserver $K8S_VERSION accepted every rendering and rejected the bad ones"
exit $rc

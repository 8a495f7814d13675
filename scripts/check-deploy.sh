#!/usr/bin/env bash
# Offline checks of the Kubernetes artifacts (docs/install.md#kubernetes):
#   bash scripts/check-deploy.sh             sync check + helm lint --strict + render (helm template,
#                                            kustomize build) + kubernetes-validate --strict for each
#                                            Kubernetes version below + strict Prometheus Operator CRD schemas
#   bash scripts/check-deploy.sh --sync      first copy the generated rules and the dashboards into the
#                                            chart's files/ and the kustomize base (after `npm run rules:gen`
#                                            or `npm run dashboards`)
#   bash scripts/check-deploy.sh validate FILE...   only validate the given manifests (used by the tests
#                                            to show that known-bad manifests are rejected)
# Tools come from scripts/install-deploy-tools.sh (pinned, installed on first use).
# Rendered manifests land in $DEPLOY_OUT (default test-artifacts/deploy).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
KUBE_VERSIONS=(1.33.0 1.35.0 1.37.0)
chart=deploy/helm/hypha-serve-exporter
base=deploy/kubernetes

bash scripts/install-deploy-tools.sh >&2
helm() { "$HELM" "$@"; }
# shellcheck disable=SC1091
. "${HSE_CACHE_DIR:-$HOME/.cache/hypha-serve-exporter}/deploy-tools/env.sh"

validate() { # files...: kubernetes-validate for every version, then the strict CRD schemas
  local kv=() v rc=0
  for v in "${KUBE_VERSIONS[@]}"; do kv+=(-k "$v"); done
  # kubernetes-validate skips custom resources (WARN, exit 0); validate-crds.js covers those.
  local log; log="$(mktemp)"
  "$KUBERNETES_VALIDATE" --strict --quiet "${kv[@]}" "$@" >"$log" 2>&1 || rc=1
  grep -v "Couldn't find schema for kind \(ServiceMonitor\|PrometheusRule\) with api version monitoring.coreos.com/v1" "$log" || true
  rm -f "$log"
  node deploy/check/validate-crds.js "$PROMETHEUS_OPERATOR_CRDS" "$@" || rc=1
  return $rc
}

if [ "${1:-}" = validate ]; then
  shift
  validate "$@"
  exit $?
fi

# The chart and the kustomize base carry real copies (never symlinks, which some tools drop silently, and
# kustomize reads no file outside its directory) of the generated PrometheusRule (mixin/build.ts
# writes deploy/kubernetes/prometheusrule.yaml) and of the dashboards (dashboards/build.ts writes
# dashboards/json/); every copy must equal its source. --sync refreshes them.
stale=0
sync() { # src dst
  if [ -L "$2" ]; then
    if [ "$mode" = --sync ]; then rm "$2"; else echo "SYMLINK: $2 must be a real copy of $1 (run: bash scripts/check-deploy.sh --sync)"; stale=1; return 0; fi
  fi
  cmp -s "$1" "$2" && return 0
  if [ "$mode" = --sync ]; then mkdir -p "$(dirname "$2")"; cp "$1" "$2"; echo "synced $2"
  else echo "STALE: $2 differs from $1 (run: bash scripts/check-deploy.sh --sync)"; stale=1; fi
}
mode="${1:-}"
for l in "$chart/files" "$chart/files/dashboards"; do
  [ -L "$l" ] && { if [ "$mode" = --sync ]; then rm "$l"; else echo "SYMLINK: $l must be a directory of copies"; stale=1; fi; }
done
sync "$base/prometheusrule.yaml" "$chart/files/prometheusrule.yaml"
for f in dashboards/json/*.json; do
  sync "$f" "$base/dashboards/$(basename "$f")"
  sync "$f" "$chart/files/dashboards/$(basename "$f")"
  # One ConfigMap per dashboard: a new dashboard needs its configMapGenerator entry.
  grep -q "dashboards/$(basename "$f")" "$base/kustomization.yaml" \
    || { echo "MISSING: $base/kustomization.yaml has no configMapGenerator for $(basename "$f")"; stale=1; }
done
for f in "$base"/dashboards/*.json "$chart"/files/dashboards/*.json; do
  [ -e "dashboards/json/$(basename "$f")" ] && continue
  if [ "$mode" = --sync ]; then rm "$f"; echo "removed $f"
  else echo "STALE: $f has no source in dashboards/json"; stale=1; fi
done
# One version everywhere: package.json, the chart's version and appVersion (its default image tag), the kustomize image.
version="$(node -p 'require("./package.json").version')"
grep -q "^appVersion: \"$version\"$" "$chart/Chart.yaml" || { echo "MISMATCH: $chart/Chart.yaml appVersion is not \"$version\" (package.json)"; stale=1; }
grep -q "^version: $version$" "$chart/Chart.yaml" || { echo "MISMATCH: $chart/Chart.yaml version is not $version (package.json)"; stale=1; }
grep -q "image: ghcr.io/aicell-lab/hypha-serve-exporter:$version$" "$base/statefulset.yaml" || { echo "MISMATCH: $base/statefulset.yaml image is not ghcr.io/aicell-lab/hypha-serve-exporter:$version (package.json)"; stale=1; }
[ $stale = 0 ] || exit 1

out="${DEPLOY_OUT:-test-artifacts/deploy}"
rm -rf "$out"; mkdir -p "$out"
rc=0
helm lint --strict "$chart" >"$out/helm-lint.log" 2>&1 || { cat "$out/helm-lint.log"; rc=1; }
helm lint --strict "$chart" -f "$chart/ci/ha-values.yaml" >>"$out/helm-lint.log" 2>&1 || { cat "$out/helm-lint.log"; rc=1; }
# --api-versions monitoring.coreos.com/v1 stands for a cluster with the Prometheus Operator CRDs (the chart
# renders the ServiceMonitor and PrometheusRule only then); helm-nocrd is a cluster without them.
crd=(--api-versions monitoring.coreos.com/v1)
for v in "${KUBE_VERSIONS[@]}"; do
  helm template hse "$chart" --namespace monitoring --kube-version "$v" "${crd[@]}" >"$out/helm-default-$v.yaml" || rc=1
  helm template hse "$chart" --namespace monitoring --kube-version "$v" "${crd[@]}" -f "$chart/ci/ha-values.yaml" >"$out/helm-ha-$v.yaml" || rc=1
done
helm template hse "$chart" --namespace monitoring --kube-version 1.33.0 >"$out/helm-nocrd-1.33.0.yaml" || rc=1
# The packaged chart (what a chart repository serves) must hold the linked files themselves.
helm package "$chart" -d "$out" >/dev/null || rc=1
helm template hse "$out/hypha-serve-exporter-$version.tgz" --namespace monitoring --kube-version 1.33.0 "${crd[@]}" -f "$chart/ci/ha-values.yaml" >"$out/helm-packaged-ha.yaml" || rc=1
cmp -s "$out/helm-packaged-ha.yaml" "$out/helm-ha-1.33.0.yaml" || { echo "FAILED: the packaged chart renders differently from the chart directory"; rc=1; }
"$KUSTOMIZE" build "$base" >"$out/kustomize-base.yaml" || rc=1
"$KUSTOMIZE" build deploy/examples/kubernetes-ha >"$out/kustomize-ha.yaml" || rc=1
[ $rc = 0 ] || { echo "FAILED: lint or render"; exit 1; }
validate "$out/helm-default-1.33.0.yaml" "$out/helm-ha-1.33.0.yaml" "$out/helm-nocrd-1.33.0.yaml" "$out/kustomize-base.yaml" "$out/kustomize-ha.yaml" \
  || { echo "FAILED: validation"; exit 1; }
# Every version renders the same objects (the chart has no version switches); keep the proof cheap.
for v in "${KUBE_VERSIONS[@]:1}"; do
  cmp -s "$out/helm-ha-1.33.0.yaml" "$out/helm-ha-$v.yaml" || { echo "helm template differs for $v: validate it too"; validate "$out/helm-ha-$v.yaml" || exit 1; }
done
echo "deploy check OK: helm lint --strict, helm template, helm package, kustomize build; kubernetes-validate --strict ${KUBE_VERSIONS[*]}; Prometheus Operator CRDs (strict)"

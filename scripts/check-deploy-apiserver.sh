#!/usr/bin/env bash
# The Kubernetes artifacts installed into a real kube-apiserver (v1.33.5 on etcd, loopback): the chart with and
# without the Prometheus Operator CRDs, as a subchart, as two shards, with OpenShift-style security contexts, and
# the kustomize base and HA overlay, by `helm install` and `kubectl apply --server-side --validate=strict`.
# Part of the test suite (scripts/test.sh runs test/integration/install-kubernetes-apiserver.test.ts); this
# runs that file alone. First run ~7 min (scripts/install-deploy-tools.sh builds kube-apiserver and kubectl,
# ~3 GB Go caches), later runs well under a minute.
#   bash scripts/check-deploy-apiserver.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
exec npx jest --selectProjects integration --runInBand --forceExit test/integration/install-kubernetes-apiserver.test.ts

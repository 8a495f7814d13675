#!/usr/bin/env bash
# The one test command: sets up what is missing, then runs every test
# (unit, then integration against real Ray Serve, Hypha, Prometheus, Alertmanager).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/setup.sh || { echo "setup failed"; exit 1; }
# setup.sh built Prometheus 3 (unless told not to), so a missing build is a failure, not a skip.
[ "${SETUP_PROMETHEUS3:-1}" = 1 ] && export HSE_REQUIRE_PROMETHEUS3=1
[ "${SETUP_ENGINES:-1}" = 1 ] && export HSE_REQUIRE_ENGINES=1
mkdir -p test-artifacts
rc=0

# --forceExit: a handle left open by a failed setup must not hold the run until CI's time limit
# (processes the harness started are killed by its exit hook). The timeouts turn a hang into a
# reported failure well inside CI's 90 minutes.
jest_run() { # name minutes jest-args...
  local name=$1 minutes=$2
  shift 2
  timeout --kill-after=30s "${minutes}m" npx jest --forceExit --json --outputFile="test-artifacts/jest-$name.json" "$@"
}

# Two workers: jest's default is one per core but one, a single worker on CI's 2 cores, and the costliest
# unit files mostly wait on promtool and vmalert-tool child processes.
jest_run unit 15 --selectProjects unit --maxWorkers=2 || rc=1
# The linter (typescript-eslint, knip: `npm run lint`); a finding fails the run like a failed test.
lint_failed=0
npm run --silent lint || { rc=1; lint_failed=1; }

# Integration files mostly wait (for rule `for:` windows, pages, restarts): one file at a time
# keeps the 2 CI cores about a quarter busy. So three lanes run side by side, each one file at a
# time, split by their measured durations (test-artifacts/jest-integration-*.json of a local run on 2 cores,
# 2026-12-07 21:30: 14.7 / 19.9 / 17.6 min, e2e-incidents 13 min; two of lane b's files since moved to lane a). Three files run alone afterwards: the HA pair, whose "exactly once" rests on
# Alertmanager gossip within its peer timeout; the status page in a real browser, which waits for a
# real Ray to scale a deployment to zero and BioEngine's proxy to deregister (beside two other lanes'
# Ray clusters on CI's 2 cores it failed in two of three CI runs: a Ray deadline once, the wait once); and the setup
# idempotence check, which rebuilds dist/ that the other files start the exporter from.
# INTEGRATION_LANES=1 runs everything one file at a time.
alone=(ha-pair status-page-browser setup-idempotent)
# Lane b takes every file not listed here (a new file lands there), and every install-* file (they
# apt-get and build images): lanes a and c list none.
lane_a=(e2e-incidents services-witness services-providers alertmanager-routing server-id worker-identity-warnings hypha-registration-bioengine)
lane_c=(vmalert-cause page-continuity dashboards-live hypha-registration prometheus-versions runbooks-hypha credentials services-restart ray-serve-exporter runbooks-web ray-harness hypha-faults runbooks-apps hypha-client)
lanes=(integration-a integration-b integration-c)
pattern() { local IFS='|'; echo "test/integration/($*)\\.test\\.ts$"; }
if [ "${INTEGRATION_LANES:-3}" = 1 ]; then
  lanes=(integration)
  jest_run integration 45 --selectProjects integration --runInBand || rc=1
else
  lane_log() { # name: the lane's console output, shown whole once it ends so the lanes do not interleave
    echo "test-artifacts/jest-$1.log"
  }
  jest_run integration-a 40 --selectProjects integration --runInBand --testPathPattern "$(pattern "${lane_a[@]}")" >"$(lane_log integration-a)" 2>&1 &
  pid_a=$!
  jest_run integration-b 40 --selectProjects integration --runInBand --testPathIgnorePatterns "$(pattern "${lane_a[@]}" "${lane_c[@]}" "${alone[@]}")" >"$(lane_log integration-b)" 2>&1 &
  pid_b=$!
  jest_run integration-c 40 --selectProjects integration --runInBand --testPathPattern "$(pattern "${lane_c[@]}")" >"$(lane_log integration-c)" 2>&1 &
  pid_c=$!
  wait "$pid_a" || rc=1
  wait "$pid_b" || rc=1
  wait "$pid_c" || rc=1
  for lane in "${lanes[@]}"; do
    echo "=== $lane ==="
    cat "$(lane_log "$lane")"
  done
  lanes+=(integration-alone)
  jest_run integration-alone 20 --selectProjects integration --runInBand --testPathPattern "$(pattern "${alone[@]}")" || rc=1
fi

LINT_FAILED="$lint_failed" LANES="${lanes[*]}" node -e '
const fs = require("fs");
let p = 0, f = 0, s = 0;
const failed = [];
if (process.env.LINT_FAILED === "1") { f += 1; console.log("lint: findings (npm run lint)"); }
const lanes = process.env.LANES.split(" ");
for (const n of ["unit", ...lanes]) {
  const file = `test-artifacts/jest-${n}.json`;
  if (!fs.existsSync(file)) { f += 1; console.log(`${n}: no results (runner crashed)`); continue; }
  const r = JSON.parse(fs.readFileSync(file, "utf8"));
  p += r.numPassedTests; f += r.numFailedTests + r.numRuntimeErrorTestSuites; s += r.numPendingTests + r.numTodoTests;
  // Named here, last: a CI log is often read from its tail only.
  for (const t of r.testResults) {
    const rel = t.name.replace(process.cwd() + "/", "");
    if (t.status === "failed" && t.assertionResults.length === 0) failed.push(`${n}: ${rel}: ${(t.message || "").split("\n").find((l) => l.trim() && !l.trim().startsWith("●")) || "suite failed"}`);
    for (const a of t.assertionResults) if (a.status === "failed") failed.push(`${n}: ${rel} › ${a.fullName}: ${(a.failureMessages[0] || "").split("\n").find((l) => l.trim()) || ""}`.slice(0, 400));
  }
}
// Every integration file must have run in some lane (a renamed file must not drop out of the lists).
const files = fs.readdirSync("test/integration").filter((x) => x.endsWith(".test.ts")).length;
const ran = lanes.map((n) => `test-artifacts/jest-${n}.json`).filter((x) => fs.existsSync(x)).reduce((n, x) => n + JSON.parse(fs.readFileSync(x, "utf8")).numTotalTestSuites, 0);
if (ran !== files) { f += 1; console.log(`integration: ${ran} of ${files} test files ran`); }
for (const x of failed) console.log(`FAILED ${x}`);
console.log(`tests: ${p} passed, ${f} failed, ${s} skipped`);
process.exit(f > 0 || p === 0 ? 1 : 0);
' || rc=1
exit $rc

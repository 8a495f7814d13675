// Time-to-page report: the fault→page times measured by the e2e replays (with the
// test override: `for:` ÷ 10, 1 s intervals) next to the worst case computed for
// the shipped defaults, and next to the two incidents as they happened.
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { parseDuration } from '../src/util/duration';
import { writeSection } from './stats';

interface Rule { alert?: string; for?: string }
const root = path.resolve(__dirname, '..', '..');

function shippedFor(alert: string): number {
  const doc = parse(fs.readFileSync(path.join(root, 'rules', 'alerts.yml'), 'utf8')) as { groups: { rules: Rule[] }[] };
  for (const g of doc.groups) for (const r of g.rules) if (r.alert === alert) return parseDuration(r.for ?? '0s') ?? 0;
  throw new Error(`no alert ${alert}`);
}
function groupWait(severity: string): number {
  const am = parse(fs.readFileSync(path.join(root, 'examples', 'alertmanager.yml'), 'utf8')) as { route: { group_wait?: string; routes?: { matchers?: string[]; group_wait?: string }[] } };
  const child = am.route.routes?.find((r) => (r.matchers ?? []).some((m) => m.includes(severity)));
  return parseDuration(child?.group_wait ?? am.route.group_wait ?? '30s') ?? 30000;
}
function promInterval(key: 'scrape_interval' | 'evaluation_interval'): number {
  const p = parse(fs.readFileSync(path.join(root, 'examples', 'prometheus.yml'), 'utf8')) as { global: Record<string, string> };
  return parseDuration(p.global[key]) ?? 15000;
}

// `proven`: the exporter proves the cause final (issue 19's per-cause wait, cause_waits.proven in
// rules/config/mixin.yml, shipped 0s): the page needs no wait beyond `for:` (shipped 0s).
const SCENARIOS: Array<{ scenario: string; alert: string; severity: string; incident: string; rayMetrics: string; proven?: boolean }> = [
  { scenario: 'incident 1a (idle at zero, proxy deregistered)', alert: 'HyphaServeAppRunningNotRegistered', severity: 'critical', proven: true, incident: 'never paged; found by hand after users reported "Service not found"', rayMetrics: 'nothing: app RUNNING, deployments HEALTHY' },
  { scenario: 'incident 1b (deployed at 0, never registered)', alert: 'HyphaServeAppRunningNotRegistered', severity: 'critical', proven: true, incident: 'never paged', rayMetrics: 'nothing: app RUNNING' },
  { scenario: 'incident 2 (artifact manager re-registered)', alert: 'HyphaServiceCachedProxyStale', severity: 'critical', proven: true, incident: '62 min of hung calls until a pod restart', rayMetrics: 'nothing (not a Ray concern)' },
  { scenario: 'Hypha down', alert: 'HyphaServeSourceDown', severity: 'critical', incident: '–', rayMetrics: 'nothing' },
  { scenario: 'crashed deployment', alert: 'HyphaServeAppUnhealthy', severity: 'warning', incident: '–', rayMetrics: 'ray_serve_application_status (2.57+ only, numeric)' },
];

function main(): void {
  const file = path.join(root, 'test-artifacts', 'e2e-times.json');
  const measured = fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as Array<{ scenario: string; alert: string; ms: number }>) : [];
  const scrape = promInterval('scrape_interval');
  const evaluation = promInterval('evaluation_interval');
  const sample = 15000; // exporter default global.interval
  const rows = SCENARIOS.map((s) => {
    const m = measured.find((x) => x.scenario === s.scenario && x.alert === s.alert);
    const forMs = shippedFor(s.alert);
    const gw = groupWait(s.severity);
    const evaluations = 2 * evaluation;
    const worst = sample + scrape + evaluations + forMs + gw;
    const forText = s.proven ? `cause proven final: ${forMs / 1000} s wait` : `${(forMs / 60000).toFixed(0)} min for`;
    return `| ${s.scenario} | \`${s.alert}\` | ${m ? `${(m.ms / 1000).toFixed(1)} s` : 'not measured in this run'} | ${forText} + ≤ ${((sample + scrape + evaluations + gw) / 1000).toFixed(0)} s ⇒ ≤ ${worst < 120000 ? `${(worst / 1000).toFixed(0)} s` : `${(worst / 60000).toFixed(1)} min`} | ${s.incident} | ${s.rayMetrics} |`;
  });
  const text = [
    'Measured: `bash scripts/test.sh` (the e2e replays in `test/integration/e2e-incidents.test.ts` write `test-artifacts/e2e-times.json`), then `node dist/bench/time-to-page.js`. Replays run with the documented test override: `for:` ÷ 10 (minimum 5 s), exporter sampling, scrape and evaluation every 1 s, Alertmanager `group_wait` 1 s.',
    `Shipped defaults (worst case): exporter sampling ${sample / 1000} s + scrape ${scrape / 1000} s + evaluation ${evaluation / 1000} s + \`for:\` + one more evaluation + \`group_wait\` of the receiver route (examples/alertmanager.yml).`,
    '',
    '| scenario | alert | fault → page, measured (test override) | shipped defaults | the incident as it happened | Ray\'s built-in metrics |',
    '|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
  process.stdout.write(`${text}\n`);
  writeSection(path.join(root, 'BENCHMARKS.md'), 'time-to-page', `## Time to page\n\n${text}`);
}

main();

// Generates dashboards/json/*.json (bare dashboard JSON, as Grafana's file provisioning and the
// UI import expect) from the TypeScript sources. Run `npm run build && node dist/dashboards/build.js`;
// `--check` writes nothing and exits 1 when a committed file differs from its source.
import fs from 'node:fs';
import path from 'node:path';
import type { Dashboard, Panel, RowPanel } from '@grafana/grafana-foundation-sdk/dashboard';
import { DASHBOARDS } from './index';
import { repoRoot } from '../src/util/repo-root';

export interface RenderedDashboard {
  uid: string;
  file: string;
  json: Dashboard;
  text: string;
}

function isRow(p: Panel | RowPanel): p is RowPanel {
  return p.type === 'row';
}

/** Numbers panels (rows too) top to bottom: ids stay stable when the source order does. */
function assignPanelIds(d: Dashboard): void {
  let next = 1;
  for (const p of d.panels ?? []) {
    p.id = next++;
    if (isRow(p)) for (const inner of p.panels) inner.id = next++;
  }
}

export function renderDashboards(): RenderedDashboard[] {
  return DASHBOARDS.map((src) => {
    const json = src.build();
    assignPanelIds(json);
    // Grafana reads annotations.list unconditionally; the SDK leaves {} when there are none.
    json.annotations = { ...json.annotations, list: json.annotations?.list ?? [] };
    return { uid: src.uid, file: src.file, json, text: `${JSON.stringify(json, null, 2)}\n` };
  });
}

export const JSON_DIR = path.join('dashboards', 'json');

function main(argv: string[]): number {
  const check = argv.includes('--check');
  const dir = path.join(repoRoot(), JSON_DIR);
  const rendered = renderDashboards();
  const expected = new Set(rendered.map((r) => r.file));
  const stale: string[] = [];
  for (const r of rendered) {
    const file = path.join(dir, r.file);
    const current = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : null;
    if (current === r.text) continue;
    stale.push(r.file);
    if (!check) {
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(file, r.text);
    }
  }
  const extra = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.json') && !expected.has(f)) : [];
  if (check) {
    for (const f of stale) process.stderr.write(`${path.join(JSON_DIR, f)} is out of date; run: node dist/dashboards/build.js\n`);
    for (const f of extra) process.stderr.write(`${path.join(JSON_DIR, f)} has no source in dashboards/index.ts\n`);
    return stale.length + extra.length === 0 ? 0 : 1;
  }
  for (const f of stale) process.stdout.write(`wrote ${path.join(JSON_DIR, f)}\n`);
  for (const f of extra) process.stderr.write(`${path.join(JSON_DIR, f)} has no source in dashboards/index.ts (not removed)\n`);
  return 0;
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));

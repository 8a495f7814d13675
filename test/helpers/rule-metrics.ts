// Which exporter metrics the shipped rules depend on, read from rules/*.yml, so that
// tests can compare them with what a real exporter serves on /metrics.
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { parseExposition } from './exposition';
import { repoRoot } from '../../src/util/repo-root';

export const RULES_DIR = 'rules';

export interface RuleDef {
  file: string;
  group: string;
  /** alert name or recorded series name */
  name: string;
  kind: 'alert' | 'record';
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function stringMap(v: unknown, where: string): Record<string, string> {
  if (v === undefined) return {};
  if (!isRecord(v)) throw new Error(`${where}: expected a mapping`);
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(v)) {
    if (typeof val !== 'string') throw new Error(`${where}.${k}: expected a string`);
    out[k] = val;
  }
  return out;
}

/** The rule files (not the tests) under rules/, sorted. */
export function ruleFiles(root: string = repoRoot()): string[] {
  const dir = path.join(root, RULES_DIR);
  return fs
    .readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()
    .map((f) => path.join(dir, f));
}

export function loadRules(root: string = repoRoot()): RuleDef[] {
  const out: RuleDef[] = [];
  for (const file of ruleFiles(root)) {
    const doc: unknown = parse(fs.readFileSync(file, 'utf8'));
    if (!isRecord(doc) || !Array.isArray(doc.groups)) throw new Error(`${file}: no groups`);
    for (const g of doc.groups) {
      if (!isRecord(g) || typeof g.name !== 'string' || !Array.isArray(g.rules)) throw new Error(`${file}: bad group`);
      for (const r of g.rules) {
        if (!isRecord(r) || typeof r.expr !== 'string') throw new Error(`${file}/${g.name}: rule without expr`);
        const where = `${path.basename(file)}/${g.name}`;
        const base = {
          file,
          group: g.name,
          expr: r.expr,
          for: typeof r.for === 'string' ? r.for : undefined,
          labels: stringMap(r.labels, `${where}.labels`),
          annotations: stringMap(r.annotations, `${where}.annotations`),
        };
        if (typeof r.alert === 'string') out.push({ ...base, name: r.alert, kind: 'alert' });
        else if (typeof r.record === 'string') out.push({ ...base, name: r.record, kind: 'record' });
        else throw new Error(`${where}: rule is neither alert nor record`);
      }
    }
  }
  return out;
}

// A metric name token: not preceded or followed by a name character or a colon, so the
// hypha_serve_… part of a recorded name such as cluster:hypha_serve_proxy_ready:sum is
// not mistaken for an exporter metric.
const METRIC_TOKEN = /(?<![A-Za-z0-9_:])hypha_serve_[A-Za-z0-9_]+(?![A-Za-z0-9_:])/g;

/** hypha_serve_* names in a PromQL expression or a template that embeds PromQL. */
export function metricNamesIn(text: string): string[] {
  return [...new Set(text.match(METRIC_TOKEN) ?? [])].sort();
}

/**
 * Every exporter metric (hypha_serve_*) that the rules read, as it appears in /metrics
 * (histograms by their _bucket/_count/_sum series). Includes the PromQL that annotation
 * templates run through `query`, since a missing metric there silently blanks a page's
 * text. Recording-rule outputs (level:metric:operations) are excluded.
 */
export function metricNamesUsedByRules(): string[] {
  const names = new Set<string>();
  for (const r of loadRules()) {
    for (const n of metricNamesIn(r.expr)) names.add(n);
    for (const text of Object.values(r.annotations)) for (const n of metricNamesIn(text)) names.add(n);
  }
  return [...names].sort();
}

/** Metric names as exposed in a Prometheus text-format /metrics body. */
export function metricNamesInExposition(body: string): Set<string> {
  return new Set(parseExposition(body).map((s) => s.name));
}

/**
 * The documented test override of the shipped rules: every alert's `for:` is
 * divided by a factor (and floored at a minimum), everything else is kept as
 * shipped, so the e2e replays page in seconds instead of minutes. The shipped
 * defaults are what docs/alerts.md and the time-to-page report compute with.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { parseDuration, formatDuration } from '../../src/util/duration';
import { repoRoot } from './proc';

interface Rule { alert?: string; record?: string; expr: string; for?: string; [k: string]: unknown }
interface RuleFile { groups: Array<{ name: string; interval?: string; rules: Rule[] }> }

export interface RulesOverride {
  /** `for:` is divided by this. */
  forDivisor: number;
  /** Floor of the shortened `for:`. */
  minFor?: string;
}

/** Shipped `for:` of every alert (ms), for time-to-page arithmetic. */
export function shippedForDurations(): Map<string, number> {
  const out = new Map<string, number>();
  for (const f of ['alerts.yml']) {
    const doc = parse(fs.readFileSync(path.join(repoRoot(), 'rules', f), 'utf8')) as RuleFile;
    for (const g of doc.groups) for (const r of g.rules) if (r.alert) out.set(r.alert, parseDuration(r.for ?? '0s') ?? 0);
  }
  return out;
}

/** Writes overridden copies of rules/*.yml to a temp dir and returns their paths. */
export function overriddenRuleFiles(o: RulesOverride): { files: string[]; dir: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rules-'));
  const min = parseDuration(o.minFor ?? '5s') ?? 5000;
  const files: string[] = [];
  for (const f of fs.readdirSync(path.join(repoRoot(), 'rules')).filter((x) => x.endsWith('.yml'))) {
    const doc = parse(fs.readFileSync(path.join(repoRoot(), 'rules', f), 'utf8')) as RuleFile;
    for (const g of doc.groups) {
      for (const r of g.rules) {
        if (r.alert && r.for) {
          const ms = parseDuration(r.for) ?? 0;
          r.for = formatDuration(Math.max(min, Math.round(ms / o.forDivisor / 1000) * 1000));
        }
      }
    }
    const out = path.join(dir, f);
    fs.writeFileSync(out, stringify(doc, { lineWidth: 0 }));
    files.push(out);
  }
  return { files, dir };
}

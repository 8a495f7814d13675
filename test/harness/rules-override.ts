/**
 * The documented test override of the shipped rules: every duration of the pack
 * is divided by a factor (and floored at a minimum), the logic is kept as
 * shipped, so the e2e replays page in seconds instead of minutes. The shipped
 * defaults are what docs/alerts.md and the time-to-page report compute with.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { loadMixinConfig, renderPack, scaleDurations } from '../../mixin';
import { parseDuration } from '../../src/util/duration';
import { repoRoot } from '../../src/util/repo-root';

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

/**
 * Renders the rules pack from the shipped mixin config with every duration scaled (each alert's `for:`
 * and `keep_firing_for:`, the gap bridge and the probe window), so a test pages and resolves in
 * seconds with the same rule logic; writes them (and vmalert's copies) to a temp dir and returns their paths.
 */
export function overriddenRuleFiles(o: RulesOverride): { files: string[]; vmalertFiles: string[]; dir: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rules-'));
  const pack = renderPack(scaleDurations(loadMixinConfig(repoRoot()), o.forDivisor, o.minFor ?? '5s'));
  const files = [path.join(dir, 'recording.yml'), path.join(dir, 'alerts.yml')];
  const vmalertFiles = [path.join(dir, 'vmalert-recording.yml'), path.join(dir, 'vmalert-alerts.yml')];
  fs.writeFileSync(files[0], pack.recording);
  fs.writeFileSync(files[1], pack.alerts);
  fs.writeFileSync(vmalertFiles[0], pack.vmalert.recording);
  fs.writeFileSync(vmalertFiles[1], pack.vmalert.alerts);
  return { files, vmalertFiles, dir };
}

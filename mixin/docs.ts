// The alert and recording-rule reference of docs/alerts.md, generated from the rule model (as docs/metrics.md is
// from the family table), so the tables say what the shipped pack does and cannot drift from it. Written between
// the markers by `npm run rules:gen`, checked by `npm run rules:check` and the unit tests.
import type { MixinConfig } from './config';
import { Group, isAlert, Rule } from './model';

export const ALERT_DOCS_PATH = 'docs/alerts.md';
const BEGIN = '<!-- generated:rules-reference (npm run rules:gen) -->';
const END = '<!-- /generated:rules-reference -->';

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\s+/g, ' ').trim();

/** The series a rule's expression reads: exporter families, `up`, and recorded series (level:metric:ops). */
export function seriesRead(expr: string): string[] {
  const names = expr.match(/(?<![A-Za-z0-9_:"])(?:[a-z_]+:[a-z0-9_]+:[a-z0-9_]+|hypha_serve_[a-z0-9_]+|up)(?=\s*[{[)]|\s*$|\s)/g) ?? [];
  return [...new Set(names)];
}

/** The labels an alert is identified by: its outer `by (…)`, else those of the recorded series it compares. */
function identity(r: Rule, recorded: ReadonlyMap<string, Rule>, c: MixinConfig): string {
  const topo = new Set(c.topology_labels);
  const by = (e: string) => /(?:max|sum|min) by \(([^)]*)\)/.exec(e)?.[1].split(',').map((s) => s.trim()).filter((l) => !topo.has(l));
  const own = by(r.expr);
  if (own) return own.join(', ');
  for (const s of seriesRead(r.expr)) {
    const rec = recorded.get(s);
    const theirs = rec && by(rec.expr);
    if (theirs) return theirs.join(', ');
  }
  return 'the labels of the series it reads';
}

/** The two tables, from the rendered groups. */
export function rulesReference(c: MixinConfig, recording: Group[], alerting: Group[]): string {
  const all = [...recording, ...alerting];
  const recorded = new Map(all.flatMap((g) => g.rules).filter((r) => !isAlert(r)).map((r) => [(r as { record: string }).record, r]));
  const code = (names: string[]) => names.map((n) => `\`${n}\``).join(', ');
  const lines = [
    BEGIN,
    '',
    `Generated from the rule model with the shipped configuration (\`rules/config/mixin.yml\`; topology labels: ${code(c.topology_labels)}, in every`,
    '`by` and every identity, left out below). "Reads" is what the expression selects: an exporter series (documented in',
    '[metrics.md](metrics.md)) or a recorded series (the second table).',
    '',
    '| alert | group | severity | for | reads | identity | what it says |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const g of alerting) {
    for (const r of g.rules) {
      if (!isAlert(r)) continue;
      const runbook = `[${r.alert}](${r.annotations.runbook_url.replace(/^.*\/docs\//, '')})`;
      lines.push(`| ${runbook} | ${g.name} | ${r.labels.severity} | ${r.for} | ${code(seriesRead(r.expr))} | ${identity(r, recorded, c)} | ${cell(r.comment)} |`);
    }
  }
  lines.push('', '| recorded series | file, group | reads | meaning |', '|---|---|---|---|');
  for (const g of all) {
    const file = recording.includes(g) ? 'recording.yml' : 'alerts.yml';
    const seen = new Set<string>();
    for (const r of g.rules) {
      if (isAlert(r) || seen.has(r.record)) continue;
      seen.add(r.record);
      lines.push(`| \`${r.record}\` | ${file}, ${g.name} | ${code(seriesRead(r.expr).filter((s) => s !== r.record))} | ${cell(r.comment)} |`);
    }
  }
  lines.push('', END);
  return lines.join('\n');
}

/** docs/alerts.md with its generated part replaced (the markers must be there once). */
export function withRulesReference(doc: string, reference: string): string {
  const a = doc.indexOf(BEGIN);
  const b = doc.indexOf(END);
  if (a < 0 || b < a) throw new Error(`${ALERT_DOCS_PATH}: the markers ${BEGIN} … ${END} are missing`);
  return doc.slice(0, a) + reference + doc.slice(b + END.length);
}

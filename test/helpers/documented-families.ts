// docs/metrics.md against what an exporter serves, as kube-state-metrics' TestDocumentation does: every
// served family documented with its type and labels, every documented family served (at least its
// HELP/TYPE headers: a family with no series in a scenario still declares itself).
import type { ParsedFamily } from './exposition';

export interface DocumentedFamily {
  name: string;
  type: string;
  /** Label names as documented, sorted (no `le`: histograms add it to their `_bucket` series). */
  labels: string[];
}

const NAME_COLUMNS = ['metric', 'name', 'family'];
const TYPES = new Set(['gauge', 'counter', 'histogram', 'summary', 'info', 'stateset', 'untyped']);

function cells(row: string): string[] {
  return row.trim().replace(/^\|/, '').replace(/\|$/, '').split('|').map((c) => c.trim());
}

const plain = (c: string) => c.replace(/`/g, '').trim();

/**
 * The families of every Markdown table with a name (metric/name/family), a type and a labels column, read by
 * column name so a regenerated table with other or reordered columns still parses. Labels are comma-separated;
 * an empty cell (or a dash) means none. Throws on a family documented twice.
 */
export function documentedFamilies(markdown: string): Map<string, DocumentedFamily> {
  const out = new Map<string, DocumentedFamily>();
  let columns: { name: number; type: number; labels: number } | undefined;
  for (const line of markdown.split('\n')) {
    if (!line.trim().startsWith('|')) {
      columns = undefined;
      continue;
    }
    const row = cells(line);
    if (row.every((c) => /^:?-+:?$/.test(c))) continue;
    const lower = row.map((c) => plain(c).toLowerCase());
    const nameCol = lower.findIndex((c) => NAME_COLUMNS.includes(c));
    if (nameCol >= 0 && lower.includes('type') && lower.includes('labels')) {
      columns = { name: nameCol, type: lower.indexOf('type'), labels: lower.indexOf('labels') };
      continue;
    }
    if (!columns) continue;
    const name = plain(row[columns.name] ?? '');
    const type = plain(row[columns.type] ?? '').toLowerCase();
    if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(name) || !TYPES.has(type)) continue;
    const labelCell = plain(row[columns.labels] ?? '');
    const labels = labelCell === '' || /^[-—–]$/.test(labelCell) ? [] : labelCell.split(',').map((l) => l.trim()).filter((l) => l !== '');
    if (out.has(name)) throw new Error(`documented twice: ${name}`);
    out.set(name, { name, type, labels: [...labels].sort() });
  }
  return out;
}

/** The label names one sample of a family should carry, as documented (histogram buckets add `le`, summaries `quantile`). */
function expectedLabels(doc: DocumentedFamily, sampleName: string): string[] {
  if (doc.type === 'histogram' && sampleName === `${doc.name}_bucket`) return [...doc.labels, 'le'].sort();
  if (doc.type === 'summary' && sampleName === doc.name) return [...doc.labels, 'quantile'].sort();
  return doc.labels;
}

/**
 * Every difference between the served families and the documented ones, one line each (empty: they agree):
 * a served family that is undocumented or has another type; a series whose label names differ from the
 * documented ones; a documented family the exporter does not declare at all. `mayBeAbsent` names, per family,
 * documented labels a series may leave out (Prometheus reads an absent label as the empty value): each is an
 * exception the caller states and justifies, never a default.
 */
export function compareWithDocs(
  served: Map<string, ParsedFamily>,
  documented: Map<string, DocumentedFamily>,
  mayBeAbsent: Record<string, string[]> = {},
): string[] {
  const problems: string[] = [];
  for (const f of served.values()) {
    const doc = documented.get(f.name);
    if (!doc) {
      problems.push(`${f.name}: served (${f.type}) but not documented`);
      continue;
    }
    if (doc.type !== f.type) problems.push(`${f.name}: served as ${f.type}, documented as ${doc.type}`);
    const seen = new Set<string>();
    const optional = new Set(mayBeAbsent[f.name] ?? []);
    for (const s of f.samples) {
      const got = Object.keys(s.labels).sort().join(',');
      const want = expectedLabels(doc, s.name).filter((l) => l in s.labels || !optional.has(l)).join(',');
      const key = `${s.name}|${got}`;
      if (got !== want && !seen.has(key)) {
        seen.add(key);
        problems.push(`${s.name}: served with labels {${got}}, documented {${want}}`);
      }
    }
  }
  for (const d of documented.values()) {
    if (!served.has(d.name)) problems.push(`${d.name}: documented (${d.type}) but not served (no HELP/TYPE header)`);
  }
  return problems;
}

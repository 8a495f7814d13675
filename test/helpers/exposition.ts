// The one reader of exposition text in tests and benches: a strict reader of the Prometheus 0.0.4
// text format (label values unescaped character by character, so a wrong escape shows up as a
// different value or a parse error), the families its HELP/TYPE headers declare, and the small
// look-ups tests make (seriesValue, seriesCount) on top of it.

export interface ParsedSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** One sample line (not a comment, not empty); throws on anything the format does not allow. */
export function parseSampleLine(line: string): ParsedSample {
  const nameMatch = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line);
  if (!nameMatch) throw new Error(`bad sample line: ${line}`);
  const name = nameMatch[0];
  let i = name.length;
  const labels: Record<string, string> = {};
  if (line[i] === '{') {
    i++;
    while (line[i] !== '}') {
      const lm = /^([a-zA-Z_][a-zA-Z0-9_]*)="/.exec(line.slice(i));
      if (!lm) throw new Error(`bad label at ${i}: ${line}`);
      i += lm[0].length;
      let v = '';
      for (;;) {
        const ch = line[i++];
        if (ch === undefined) throw new Error(`unterminated label value: ${line}`);
        if (ch === '"') break;
        if (ch === '\\') {
          const e = line[i++];
          if (e === 'n') v += '\n';
          else if (e === '\\' || e === '"') v += e;
          else throw new Error(`bad escape \\${e}: ${line}`);
        } else {
          v += ch;
        }
      }
      if (lm[1] in labels) throw new Error(`duplicate label ${lm[1]}: ${line}`);
      labels[lm[1]] = v;
      if (line[i] === ',') i++;
    }
    i++;
  }
  if (line[i] !== ' ') throw new Error(`no value: ${line}`);
  const raw = line.slice(i + 1).trim();
  const value = raw === 'NaN' || raw === 'Nan' ? NaN : raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw);
  if (raw === '' || (Number.isNaN(value) && !/^nan$/i.test(raw))) throw new Error(`bad value: ${line}`);
  return { name, labels, value };
}

/** Every sample of an exposition text, in order. */
export function parseExposition(text: string): ParsedSample[] {
  const out: ParsedSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    out.push(parseSampleLine(line));
  }
  return out;
}

/** Each sample as one canonical string (labels sorted), for order-free comparison. */
export function seriesSet(samples: ParsedSample[]): Set<string> {
  const esc = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
  return new Set(samples.map((s) => {
    const ls = Object.keys(s.labels).sort().map((k) => `${k}="${esc(s.labels[k])}"`).join(',');
    return `${s.name}${ls ? `{${ls}}` : ''} ${s.value}`;
  }));
}

export interface ParsedFamily {
  name: string;
  /** From `# TYPE` (gauge, counter, histogram, summary, untyped); 'untyped' when only HELP was given. */
  type: string;
  help: string;
  samples: ParsedSample[];
}

/**
 * Sample names a family of this type may carry: in 0.0.4 a counter's TYPE line names its `_total` series
 * itself; in OpenMetrics it names the family and the samples add `_total` (and `_created`).
 */
function sampleNames(name: string, type: string): string[] {
  if (type === 'histogram') return [`${name}_bucket`, `${name}_sum`, `${name}_count`, `${name}_created`];
  if (type === 'summary') return [name, `${name}_sum`, `${name}_count`, `${name}_created`];
  if (type === 'counter') return [name, `${name}_total`, `${name}_created`];
  if (type === 'info') return [`${name}_info`];
  return [name];
}

/**
 * The families an exposition declares (by their HELP/TYPE headers, so a family with no series is
 * still there), each with its samples. A sample that belongs to no declared family, or to another
 * family than the header before it, throws: the format keeps a family's lines together.
 */
export function parseFamilies(text: string): Map<string, ParsedFamily> {
  const fams = new Map<string, ParsedFamily>();
  let cur: ParsedFamily | undefined;
  const header = (name: string): ParsedFamily => {
    let f = fams.get(name);
    if (!f) {
      f = { name, type: 'untyped', help: '', samples: [] };
      fams.set(name, f);
    }
    cur = f;
    return f;
  };
  for (const line of text.split('\n')) {
    if (line === '' || line === '# EOF') continue;
    const h = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*)(?: (.*))?$/.exec(line);
    if (h) {
      const f = header(h[2]);
      if (h[1] === 'HELP') f.help = h[3] ?? '';
      else f.type = h[3] ?? 'untyped';
      continue;
    }
    if (line.startsWith('#')) continue;
    const s = parseSampleLine(line);
    if (!cur || !sampleNames(cur.name, cur.type).includes(s.name)) {
      throw new Error(`sample outside its family's block (after ${cur?.name ?? 'no header'}): ${line}`);
    }
    cur.samples.push(s);
  }
  return fams;
}

/** The samples of one series name whose labels include `labels`. */
export function samplesOf(text: string, name: string, labels: Record<string, string> = {}): ParsedSample[] {
  const out: ParsedSample[] = [];
  for (const line of text.split('\n')) {
    // Cheap pre-filter: tests poll large expositions for one series.
    if (!line.startsWith(name) || (line[name.length] !== '{' && line[name.length] !== ' ')) continue;
    const s = parseSampleLine(line);
    if (Object.entries(labels).every(([k, v]) => s.labels[k] === v)) out.push(s);
  }
  return out;
}

/** Value of the first series of `name` whose labels include `labels`, or undefined. */
export function seriesValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  return samplesOf(text, name, labels)[0]?.value;
}

/** How many series of `name` have labels including `labels`. */
export function seriesCount(text: string, name: string, labels: Record<string, string> = {}): number {
  return samplesOf(text, name, labels).length;
}

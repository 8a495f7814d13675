// A strict reader of the Prometheus 0.0.4 text format for tests: label values are unescaped
// character by character, so a wrong escape shows up as a different value or a parse error.

export interface ParsedSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parseExposition(text: string): ParsedSample[] {
  const out: ParsedSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    let i = 0;
    const nameMatch = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line);
    if (!nameMatch) throw new Error(`bad sample line: ${line}`);
    const name = nameMatch[0];
    i = name.length;
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
    out.push({ name, labels, value });
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

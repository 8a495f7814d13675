// Every log line or message the runbooks (docs/runbooks/*.md) quote from upstream (marked `text`<!--quote:origin-->)
// exists in the pinned package scripts/setup.sh installed: Ray 2.60.0 in .venv/ray, hypha 0.21.137,
// hypha-rpc 0.21.47 and python-jose in .venv/hypha. BioEngine is not installed here: its quotes are
// checked against the stand-in proxy test/ray-apps/bioengine_like.py, which copies its log lines from
// bioengine 03b490c character for character. `<placeholder>` in a quote and `{expr}` / `%s` in the
// source each stand for any text; everything else must match.
import fs from 'node:fs';
import path from 'node:path';
import { parseQuotes, runbookPages } from '../../scripts/runbook-steps';

const root = path.resolve(__dirname, '..', '..');
const quotes = runbookPages(root).flatMap((p) => parseQuotes(p.markdown).map((q) => ({ ...q, file: p.file })));

function sitePackages(venv: string): string {
  const lib = path.join(root, '.venv', venv, 'lib');
  const py = fs.readdirSync(lib).find((d) => d.startsWith('python'));
  if (!py) throw new Error(`no python under ${lib}: run scripts/setup.sh`);
  return path.join(lib, py, 'site-packages');
}

const ORIGINS: Record<string, () => string[]> = {
  ray: () => [path.join(sitePackages('ray'), 'ray')],
  hypha: () => [path.join(sitePackages('hypha'), 'hypha')],
  'hypha-rpc': () => [path.join(sitePackages('hypha'), 'hypha_rpc')],
  'python-jose': () => [path.join(sitePackages('hypha'), 'jose')],
  bioengine: () => [path.join(root, 'test', 'ray-apps', 'bioengine_like.py')],
};

function pyFiles(p: string): string[] {
  if (fs.statSync(p).isFile()) return [p];
  return fs.readdirSync(p, { withFileTypes: true }).flatMap((e) => {
    const f = path.join(p, e.name);
    if (e.isDirectory()) return e.name === '__pycache__' || e.name === 'tests' ? [] : pyFiles(f);
    return e.name.endsWith('.py') ? [f] : [];
  });
}

const WILD = '\u0000';
/** Adjacent string literals joined ("a "\n  "b" -> "a b"), so a message split over lines is one line. */
const joinLiterals = (src: string) => src.replace(/(["'])\s*\n\s*[rRbBuUfF]{0,2}\1/g, '');
const sourceLine = (l: string) => l.replace(/\{[^{}]*\}|%[-#0-9.]*[sdrfx]/g, WILD);
const quoteText = (q: string) => q.replace(/<[^>]+>/g, WILD);

/**
 * Most literal characters of `q` matched by a stretch of `s` (either side's WILD matches any text);
 * -1 when none matches.
 */
function matchScore(q: string, s: string): number {
  let prev = new Array<number>(s.length + 1).fill(0);
  for (let i = 1; i <= q.length; i++) {
    const cur = new Array<number>(s.length + 1).fill(-1);
    for (let j = 0; j <= s.length; j++) {
      let best = -1;
      if (q[i - 1] === WILD) best = Math.max(prev[j], j > 0 ? cur[j - 1] : -1);
      if (j > 0) {
        if (s[j - 1] === WILD) best = Math.max(best, cur[j - 1], prev[j]);
        if (q[i - 1] !== WILD && s[j - 1] !== WILD && q[i - 1] === s[j - 1] && prev[j - 1] >= 0) best = Math.max(best, prev[j - 1] + 1);
      }
      cur[j] = best;
    }
    prev = cur;
  }
  return Math.max(...prev);
}

const texts = new Map<string, string[]>();
function lines(origin: string): string[] {
  let l = texts.get(origin);
  if (!l) {
    l = ORIGINS[origin]().flatMap(pyFiles).flatMap((f) => joinLiterals(fs.readFileSync(f, 'utf8')).split('\n'));
    texts.set(origin, l);
  }
  return l;
}

/** Where `quote` occurs in the origin's source, or undefined. */
function find(origin: string, quote: string): string | undefined {
  const q = quoteText(quote);
  const literal = q.replace(new RegExp(WILD, 'g'), '').length;
  const words = quote.replace(/<[^>]+>/g, ' ').split(/[^A-Za-z]+/).filter((w) => w.length >= 4);
  for (const l of lines(origin)) {
    if (words.filter((w) => l.includes(w)).length < Math.ceil(words.length * 0.6)) continue;
    if (matchScore(q, sourceLine(l)) >= literal * 0.75) return l.trim();
  }
  return undefined;
}

describe('quotes in the runbooks exist verbatim upstream', () => {
  test('the runbooks quote upstream (markers are found)', () => {
    expect(quotes.length).toBeGreaterThanOrEqual(20);
    expect(quotes.filter((q) => !(q.origin in ORIGINS))).toEqual([]);
    for (const o of ['ray', 'hypha', 'bioengine']) expect([o, quotes.some((q) => q.origin === o)]).toEqual([o, true]);
  });

  test.each(quotes.map((q) => [`${q.file}:${q.line} (${q.origin})`, q.origin, q.text]))('%s', (_where, origin, text) => {
    expect({ text, found: find(origin, text) !== undefined }).toEqual({ text, found: true });
  });

  test('the matcher refuses what upstream does not say (the pre-2.60 wording of the proxy restart)', () => {
    expect(find('ray', "Proxy on node '<node_id>' UNHEALTHY. Shutting down the unhealthy proxy and starting a new one.")).toBeUndefined();
    expect(find('ray', "Proxy on node '<node_id>' is unhealthy. Shutting down the unhealthy proxy and starting a new one.")).toBeDefined();
    expect(find('hypha', 'Server with the same id (<id>) is already running, please use a different server id by passing --server-id=new-server-id to the command line.')).toBeUndefined();
  });
});

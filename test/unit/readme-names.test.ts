// The names README.md and the runbooks give a reader must be the code's: every alert from rules/*.yml, every
// flag from the flag tables in src/cli/flags.ts, every hypha_serve_ family from the family table (which
// docs/metrics.md is generated from). A renamed or removed one left in the prose fails here, and so does a
// flag the README's flag table or a subcommand's synopsis (`check`, `rules`) forgets.
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { CHECK_FLAG_SPECS, FLAG_SPECS, RULES_FLAG_SPECS } from '../../src/cli/flags';
import { familyDocs } from '../../src/metrics/docs';

const root = path.resolve(__dirname, '..', '..');
const read = (f: string) => fs.readFileSync(path.join(root, f), 'utf8');

interface Known {
  alerts: Set<string>;
  records: Set<string>;
  families: Set<string>;
}

function knownNames(): Known {
  const alerts = new Set<string>();
  const records = new Set<string>();
  for (const f of fs.readdirSync(path.join(root, 'rules')).filter((n) => n.endsWith('.yml'))) {
    const doc = parse(read(`rules/${f}`)) as { groups: { rules: { alert?: string; record?: string }[] }[] };
    for (const r of doc.groups.flatMap((g) => g.rules)) {
      if (r.alert !== undefined) alerts.add(r.alert);
      if (r.record !== undefined) records.add(r.record);
    }
  }
  return { alerts, records, families: new Set(familyDocs().map((d) => d.name)) };
}

// Series a family's samples are named by, beyond the family name itself.
const SERIES_SUFFIXES = ['_bucket', '_sum', '_count', '_total'];

/** Alert and metric names in a text that the code does not have. */
function unknownNames(text: string, known: Known): string[] {
  const problems: string[] = [];
  // Recording rules first (level:metric:operations), so their metric part is not read as a family.
  let rest = text.replace(/\b[a-z_]+:hypha_serve_[a-z0-9_]+:[a-z0-9_]+/g, (name) => {
    if (!known.records.has(name)) problems.push(`recording rule ${name}`);
    return ' ';
  });
  rest = rest.replace(/\bhypha_serve_[a-z0-9_]*/g, (name) => {
    // A prefix written as a family group (`hypha_serve_source_*`, `hypha_serve_exporter_{…}`) must start one.
    if (name.endsWith('_')) {
      if (![...known.families].some((f) => f.startsWith(name))) problems.push(`metric prefix ${name}`);
    } else if (!known.families.has(name) && !SERIES_SUFFIXES.some((s) => name.endsWith(s) && known.families.has(name.slice(0, -s.length)))) {
      problems.push(`metric ${name}`);
    }
    return ' ';
  });
  for (const m of rest.matchAll(/\bHypha(?:Serve|Service)[A-Z][A-Za-z]*/g)) {
    if (!known.alerts.has(m[0])) problems.push(`alert ${m[0]}`);
  }
  return [...new Set(problems)];
}

/** `--name` flags in a piece of text (`--name=value`, `--name value`, `[--name=X]`). */
const flagsIn = (text: string) => [...text.matchAll(/(?<![\w-])--([a-z][a-z0-9.-]*[a-z0-9])/g)].map((m) => m[1]);

/**
 * The README's flags: those in the first cell of its table rows (the exporter's flag table), those on a
 * `hypha-serve-exporter check …` or `hypha-serve-exporter rules …` command line (the subcommands' synopses) and
 * those on any other `hypha-serve-exporter …` command line (examples). Other commands (npm, podman, node
 * scripts) have flags of their own and are not read.
 */
function readmeFlags(readme: string): { main: string[]; check: string[]; rules: string[]; examples: string[] } {
  const main: string[] = [];
  const check: string[] = [];
  const rules: string[] = [];
  const examples: string[] = [];
  for (const line of readme.split('\n')) {
    const row = /^\|\s*([^|]*)\|/.exec(line);
    if (row && row[1].trimStart().startsWith('`--')) main.push(...flagsIn(row[1]));
    for (const cmd of line.matchAll(/(?:^|`)hypha-serve-exporter( check\b| rules\b)?([^`]*)/g)) {
      const into = cmd[1] === ' check' ? check : cmd[1] === ' rules' ? rules : examples;
      into.push(...flagsIn(cmd[2].split('#')[0]));
    }
  }
  return { main, check, rules, examples };
}

/** Flags the README's table, examples or subcommand synopses name that the code lacks, and flags of the code they miss. */
function flagProblems(readme: string): string[] {
  const { main, check, rules, examples } = readmeFlags(readme);
  const mainSpec = FLAG_SPECS.map((f) => f.name);
  const sub = (name: string, named: string[], spec: string[]) => [
    ...named.filter((f) => !spec.includes(f)).map((f) => `${name} synopsis names --${f}, which ${name} does not have`),
    ...spec.filter((f) => !named.includes(f)).map((f) => `${name} synopsis misses --${f}`),
  ];
  return [
    ...main.filter((f) => !mainSpec.includes(f)).map((f) => `flag table names --${f}, which the exporter does not have`),
    ...[...new Set(examples)].filter((f) => !mainSpec.includes(f)).map((f) => `a command line names --${f}, which the exporter does not have`),
    ...mainSpec.filter((f) => !main.includes(f)).map((f) => `flag table misses --${f}`),
    ...sub('check', check, CHECK_FLAG_SPECS.map((f) => f.name)),
    ...sub('rules', rules, RULES_FLAG_SPECS.map((f) => f.name)),
  ];
}

/** The runbook pages, docs/runbooks/*.md. */
function runbookFiles(): string[] {
  return fs.readdirSync(path.join(root, 'docs/runbooks')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/runbooks/${f}`);
}

describe('names in README.md and the runbooks are the code\'s', () => {
  const known = knownNames();
  const readme = read('README.md');

  it('the sources of truth are read (rules, family table, flag tables)', () => {
    expect(known.alerts).toContain('HyphaServeAppRunningNotRegistered');
    expect(known.alerts).toContain('HyphaServiceCachedProxyStale');
    expect(known.records).toContain('service:hypha_serve_service_client_id_changes:increase1h');
    expect(known.families).toContain('hypha_serve_source_up');
    expect(known.families).toContain('process_resident_memory_bytes');
    expect(FLAG_SPECS.map((f) => f.name)).toContain('storage.path');
  });

  it('README.md names no alert or metric the code lacks', () => {
    expect(unknownNames(readme, known)).toEqual([]);
  });

  it('README.md names every flag of the exporter and of check, and none they lack', () => {
    expect(flagProblems(readme)).toEqual([]);
    // Both places are found at all, so the check above is not vacuous.
    const { main, check } = readmeFlags(readme);
    expect(main.length).toBeGreaterThanOrEqual(FLAG_SPECS.length);
    expect(check.length).toBeGreaterThanOrEqual(CHECK_FLAG_SPECS.length);
  });

  it('README.md links the generated references instead of copying them', () => {
    for (const link of ['docs/metrics.md', 'docs/alerts.md', 'docs/runbooks/', 'docs/install.md']) expect(readme).toContain(`](${link})`);
    // No copy of the family table or the alert table: one row per family or alert would name dozens.
    const tableRows = readme.split('\n').filter((l) => /^\|\s*`?(hypha_serve_|\[?Hypha(Serve|Service))/.test(l));
    expect(tableRows).toEqual([]);
  });

  it.each(runbookFiles())('%s names no alert or metric the code lacks', (file) => {
    expect(unknownNames(read(file), known)).toEqual([]);
  });

  it('there is a runbook to check', () => {
    expect(runbookFiles().length).toBeGreaterThan(0);
  });

  describe('the checks can fail (made-up names)', () => {
    it('an unknown alert, family, recording rule or family prefix is reported; series suffixes and known names pass', () => {
      const text = [
        'HyphaServeAppRunningNotRegistered pages; HyphaServeAppMadeUp does not exist, nor `HyphaServiceGhost`.',
        '`hypha_serve_source_up`, `hypha_serve_service_call_duration_seconds_bucket`, `hypha_serve_app_status_count`,',
        '`hypha_serve_source_*` and `service:hypha_serve_service_client_id_changes:increase1h` are fine;',
        '`hypha_serve_app_made_up`, `hypha_serve_nothing_*` and `ray_cluster_app:hypha_serve_app_unhealthy:bool` are not.',
      ].join('\n');
      expect(unknownNames(text, known)).toEqual([
        'recording rule ray_cluster_app:hypha_serve_app_unhealthy:bool',
        'metric hypha_serve_app_made_up',
        'metric prefix hypha_serve_nothing_',
        'alert HyphaServeAppMadeUp',
        'alert HyphaServiceGhost',
      ]);
    });

    it('a flag the code lacks, a missing flag and a made-up flag on a command line are reported', () => {
      const broken = readme
        .replace('| `--web.max-connections` |', '| `--web.max-conns` |')
        .replace('[--timeout=30s] ', '[--deadline=30s] ')
        .replace('hypha-serve-exporter --config.file=config.yml', 'hypha-serve-exporter --config=config.yml')
        .replace('[--out=DIR]', '[--out-dir=DIR]');
      expect(broken).not.toBe(readme);
      expect(flagProblems(broken)).toEqual([
        'flag table names --web.max-conns, which the exporter does not have',
        'a command line names --config, which the exporter does not have',
        'flag table misses --web.max-connections',
        'check synopsis names --deadline, which check does not have',
        'check synopsis misses --timeout',
        'rules synopsis names --out-dir, which rules does not have',
        'rules synopsis misses --out',
      ]);
      // A README without the flag table misses every flag.
      const noTable = readme.split('\n').filter((l) => !l.startsWith('| `--')).join('\n');
      expect(flagProblems(noTable)).toHaveLength(FLAG_SPECS.length);
    });
  });
});

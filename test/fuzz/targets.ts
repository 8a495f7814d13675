// The fuzz campaign (issue 26): fast-check properties over every parser of outside input, with the
// recorded Ray and Hypha fixtures as seeds for mutated inputs. test/unit/fuzz-*.test.ts runs a
// fixed-seed slice; `npm run fuzz` (scripts/fuzz.ts) runs the large campaign and writes its figures.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import pino from 'pino';
import { ConfigError, loadConfig } from '../../src/config/load';
import { loadWebConfig } from '../../src/server/web-config';
import { parseServeInstance } from '../../src/sources/ray-serve/parse';
import { parseServiceList } from '../../src/sources/hypha/types';
import { parseWorkerApps, parseWorkerStatus } from '../../src/sources/hypha/workers';
import { loadPersistedState, STATE_FILE } from '../../src/snapshot/persisted';
import { sampleLine } from '../../src/metrics/text';
import { SourceError } from '../../src/util/errors';
import { parseExposition } from '../helpers/exposition';

const root = path.resolve(__dirname, '..', '..');
const fixtureRoot = fs.existsSync(path.join(root, 'test', 'fixtures')) ? path.join(root, 'test', 'fixtures') : path.resolve(root, '..', 'test', 'fixtures');

function jsonFiles(dir: string): unknown[] {
  const out: unknown[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...jsonFiles(p));
    else if (e.name.endsWith('.json')) out.push(JSON.parse(fs.readFileSync(p, 'utf8')) as unknown);
  }
  return out;
}

/** Replaces the value at the n-th node (depth first) of a JSON value. */
function mutate(v: unknown, n: { left: number }, replacement: unknown): unknown {
  if (n.left-- === 0) return replacement;
  if (Array.isArray(v)) return v.map((x) => mutate(x, n, replacement));
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, mutate(x, n, replacement)]));
  return v;
}

/** Recorded fixtures, mutated at one node (or whole new values). */
function seeded(seeds: unknown[]): fc.Arbitrary<unknown> {
  const mutated = fc.tuple(fc.nat(seeds.length - 1), fc.nat(2000), fc.jsonValue({ maxDepth: 3 })).map(([i, at, r]) => mutate(seeds[i], { left: at }, r));
  return fc.oneof(mutated, fc.jsonValue({ maxDepth: 4 }), fc.constantFrom(...seeds));
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fuzz-'));
/** Removes the campaign's scratch files; also done at exit, which a jest worker that is killed never reaches. */
export function removeScratch(): void {
  fs.rmSync(tmp, { recursive: true, force: true });
}
process.on('exit', removeScratch);

/** A ConfigError that names the file and a line or a field: the only thing a loader may throw. */
function clearConfigError(e: unknown, file: string): void {
  if (!(e instanceof ConfigError)) throw new Error(`not a ConfigError: ${String(e)}`);
  if (!e.message.startsWith(file)) throw new Error(`does not name the file: ${e.message}`);
  if (e.line === undefined && e.field === '' && !/cannot read/.test(e.problem)) throw new Error(`names neither line nor field: ${e.message}`);
  if (e.problem.trim() === '') throw new Error('empty problem');
}

const yamlish = (keys: string[]) => fc.oneof(
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.array(fc.tuple(fc.constantFrom(...keys), fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.string())), { maxLength: 6 })
    .map((pairs) => pairs.map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join('\n')),
  fc.tuple(fc.constantFrom(...keys), fc.nat(6), fc.string({ maxLength: 20 })).map(([k, indent, v]) => `${k}:\n${' '.repeat(indent)}- ${v}\n  x: [\n`),
);

export interface Target {
  name: string;
  property: fc.IProperty<[unknown]> | fc.IAsyncProperty<[unknown]>;
}

export function targets(): Target[] {
  const ray = jsonFiles(path.join(fixtureRoot, 'ray'));
  const hypha = jsonFiles(path.join(fixtureRoot, 'hypha'));
  const configFile = path.join(tmp, 'config.yml');
  const webFile = path.join(tmp, 'web.yml');
  const stateDir = path.join(tmp, 'state');
  fs.mkdirSync(stateDir, { recursive: true });
  const silent = pino({ level: 'silent' });
  return [
    {
      name: 'Ray Serve payload parser',
      property: fc.property(seeded(ray), (body) => {
        try {
          parseServeInstance(body);
        } catch (e) {
          if (!(e instanceof SourceError) || e.message === '') throw e;
        }
      }) as fc.IProperty<[unknown]>,
    },
    {
      name: 'Hypha service-list and worker-status parsers',
      property: fc.property(seeded(hypha), (raw) => {
        parseServiceList(raw);
        parseWorkerStatus(raw);
        parseWorkerApps(raw);
      }) as fc.IProperty<[unknown]>,
    },
    {
      name: 'config loader',
      property: fc.property(yamlish(['ray_clusters', 'hypha', 'global', 'watched_services', 'hypha_registration', 'name', 'dashboard_url']), (text) => {
        fs.writeFileSync(configFile, text as string);
        try {
          loadConfig(configFile, {});
        } catch (e) {
          clearConfigError(e, configFile);
        }
      }) as fc.IProperty<[unknown]>,
    },
    {
      name: 'web config loader',
      property: fc.property(yamlish(['tls_server_config', 'basic_auth_users', 'rate_limit', 'http_server_config', 'cert_file', 'headers']), (text) => {
        fs.writeFileSync(webFile, text as string);
        try {
          loadWebConfig(webFile);
        } catch (e) {
          clearConfigError(e, webFile);
        }
      }) as fc.IProperty<[unknown]>,
    },
    {
      name: 'state-file loader',
      property: fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 300 }), fc.jsonValue({ maxDepth: 5 }).map((v) => JSON.stringify(v))), (text) => {
        fs.writeFileSync(path.join(stateDir, STATE_FILE), text as string);
        loadPersistedState(stateDir, silent);
      }) as fc.IProperty<[unknown]>,
    },
    {
      name: 'exposition writer (label values round-trip byte for byte)',
      property: fc.property(fc.tuple(fc.array(fc.string({ unit: 'binary', maxLength: 40 }), { minLength: 1, maxLength: 4 }), fc.double()), ([values, value]) => {
        const names = (values as string[]).map((_v, i) => `l${i}`);
        const line = sampleLine('fuzz_metric', names, values as string[], value as number);
        const [parsed] = parseExposition(line);
        (values as string[]).forEach((v, i) => {
          if (parsed.labels[`l${i}`] !== v) throw new Error(`label ${i} did not round-trip: ${JSON.stringify(v)} → ${JSON.stringify(parsed.labels[`l${i}`])}`);
        });
        // -0 is written as 0: the same sample to Prometheus.
        if (parsed.value !== value && !(Number.isNaN(parsed.value) && Number.isNaN(value as number))) throw new Error(`value ${String(value)} → ${parsed.value}`);
      }) as unknown as fc.IProperty<[unknown]>,
    },
  ];
}

/** Lines the writer makes from arbitrary label values, checked by `promtool check metrics` (one call). */
export function promtoolSample(lines: number, seed: number): { ok: boolean; output: string } {
  const values = fc.sample(fc.string({ unit: 'binary', maxLength: 30 }), { numRuns: lines, seed });
  const text = '# HELP fuzz_metric Fuzzed label values.\n# TYPE fuzz_metric gauge\n'
    + values.map((v, i) => sampleLine('fuzz_metric', ['i', 'v'], [String(i), v], i)).join('');
  try {
    const output = execFileSync('/usr/bin/promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
    return { ok: true, output };
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string };
    // promtool exits 3 for lint findings only (e.g. no _total suffix); parse errors say "error while linting" / exit 1.
    const output = `${err.stdout ?? ''}${err.stderr ?? ''}`;
    return { ok: !/error|invalid|parse/i.test(output), output };
  }
}

/** Runs every target; failures are reported with fast-check's counterexample, not thrown. */
export function runCampaign(numRuns: number, seed: number): { name: string; runs: number; failure?: string }[] {
  return targets().map((t) => {
    const r = fc.check(t.property as fc.IProperty<[unknown]>, { numRuns, seed });
    return { name: t.name, runs: r.numRuns, failure: r.failed ? `${String(r.counterexample?.[0] === undefined ? '' : JSON.stringify(r.counterexample[0]))}: ${r.errorInstance instanceof Error ? r.errorInstance.message : String(r.errorInstance)}` : undefined };
  });
}

import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import type { z } from 'zod';
import { configSchema } from '../../src/config/schema';
import { loadConfig } from '../../src/config/load';

// examples/full.yml says it shows every option "with its default where it has one". Its values are
// written by hand, so every scalar it shows where the schema has a default must equal that default
// (it once said reconnect_settle: 20s while the schema said 90s).

const FULL = path.join(__dirname, '../../examples/full.yml');

interface Def {
  type: string;
  innerType?: z.ZodType;
  defaultValue?: unknown;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  options?: z.ZodType[];
  in?: z.ZodType;
}

function defOf(s: z.ZodType): Def {
  return (s as unknown as { _zod: { def: Def } })._zod.def;
}

/** The object or array schema under optional/default/pipe wrappers; undefined for a leaf. */
function container(s: z.ZodType, value: unknown): z.ZodType | undefined {
  const d = defOf(s);
  switch (d.type) {
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
      return container(d.innerType as z.ZodType, value);
    case 'pipe':
      return container(d.in as z.ZodType, value);
    case 'union':
      // The option whose shape fits the value: an array for a list, an object for a mapping.
      return (d.options ?? []).map((o) => container(o, value)).find((c) => c !== undefined && (defOf(c).type === 'array') === Array.isArray(value));
    case 'object':
    case 'array':
      return s;
    default:
      return undefined;
  }
}

/** The schema's default of a field, if it has one: its own, or the global one its description names. */
function schemaDefault(s: z.ZodType): { value: unknown } | undefined {
  const d = defOf(s);
  if (d.type === 'default') return { value: d.defaultValue };
  const fallback = /\(default: global\.(\w+)\)/.exec(s.description ?? '');
  const globalField = fallback ? defOf(container(configSchema, {}) as z.ZodType).shape?.global : undefined;
  if (fallback && globalField) {
    const g = defOf(container(globalField, {}) as z.ZodType).shape?.[fallback[1]];
    return g ? schemaDefault(g) : undefined;
  }
  if (d.type === 'optional' || d.type === 'nullable') return schemaDefault(d.innerType as z.ZodType);
  return undefined;
}

interface Shown {
  path: string;
  shown: unknown;
  schema: unknown;
}

/** Every scalar in `value` whose field has a schema default, with both values. */
function shownDefaults(schema: z.ZodType, value: unknown, at = ''): Shown[] {
  const c = container(schema, value);
  const out: Shown[] = [];
  if (c && Array.isArray(value) && defOf(c).type === 'array') {
    value.forEach((v, i) => out.push(...shownDefaults(defOf(c).element as z.ZodType, v, `${at}[${i}]`)));
  } else if (c && value !== null && typeof value === 'object' && defOf(c).type === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const field = defOf(c).shape?.[k];
      if (!field) throw new Error(`${at}.${k}: not in the schema`);
      const p = at ? `${at}.${k}` : k;
      if (v !== null && typeof v === 'object') out.push(...shownDefaults(field, v, p));
      else {
        const dflt = schemaDefault(field);
        if (dflt !== undefined && (typeof dflt.value !== 'object' || dflt.value === null)) out.push({ path: p, shown: v, schema: dflt.value });
      }
    }
  }
  return out;
}

describe('examples/full.yml', () => {
  const text = fs.readFileSync(FULL, 'utf8');

  it('is a valid config', () => {
    expect(() => loadConfig(FULL, { RAY_DASHBOARD_TOKEN: 't', HYPHA_TOKEN: 'h' })).not.toThrow();
  });

  it('shows every default the schema has as the schema has it', () => {
    const shown = shownDefaults(configSchema, parse(text));
    // The check reaches the nested fields, not only the top level.
    expect(shown.map((s) => s.path)).toEqual(expect.arrayContaining([
      'global.interval', 'ray_clusters[0].max_apps', 'ray_clusters[0].interval', 'ray_clusters[0].proxy_probe.timeout',
      'hypha_registration.reconnect_settle', 'hypha_registration.workers.interval', 'watched_services[0].resolve_mode',
      'watched_services[0].canary.enabled',
    ]));
    expect(shown.filter((s) => s.shown !== s.schema)).toEqual([]);
  });

  it('a value that differs from the schema default is found', () => {
    const drifted = parse(text.replace(/reconnect_settle: \S+/, 'reconnect_settle: 20s'));
    expect(shownDefaults(configSchema, drifted).filter((s) => s.shown !== s.schema)).toEqual([
      { path: 'hypha_registration.reconnect_settle', shown: '20s', schema: '90s' },
    ]);
  });
});

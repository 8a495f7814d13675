import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { configJsonSchema } from '../../src/config/json-schema';
import { loadConfig } from '../../src/config/load';

const root = path.resolve(__dirname, '..', '..');

describe('published config schema and examples', () => {
  it('docs/config.schema.json is up to date', () => {
    const committed = JSON.parse(fs.readFileSync(path.join(root, 'docs', 'config.schema.json'), 'utf8')) as unknown;
    expect(committed).toEqual(configJsonSchema());
  });

  it('every examples/*.yml exporter config loads', () => {
    const files = fs.readdirSync(path.join(root, 'examples')).filter((f) => /\.ya?ml$/.test(f));
    const configs = files.filter((f) => {
      const doc = parse(fs.readFileSync(path.join(root, 'examples', f), 'utf8')) as Record<string, unknown> | null;
      return doc !== null && typeof doc === 'object' && 'ray_clusters' in doc;
    });
    expect(configs.length).toBeGreaterThan(0);
    for (const f of configs) {
      expect(() => loadConfig(path.join(root, 'examples', f), { RAY_DASHBOARD_TOKEN: 't', HYPHA_TOKEN: 't' })).not.toThrow();
    }
  });
});

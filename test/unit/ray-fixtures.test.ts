// Parsing and rendering of Serve API answers recorded from real Ray clusters
// (test/fixtures/ray/<version>/, recorded by scripts/record-ray-fixtures.ts).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseServeInstance, ParsedServe } from '../../src/sources/ray-serve/parse';
import { exporterWithConfig, scrapeText } from '../helpers/exporter';
import { seriesCount, seriesValue } from '../helpers/exposition';
import { json, startUpstream } from '../helpers/http-upstream';

const root = path.resolve(__dirname, '..', 'fixtures', 'ray');
const versions = fs.readdirSync(root).filter((d) => fs.statSync(path.join(root, d)).isDirectory());

function load(version: string, file: string): unknown {
  return JSON.parse(fs.readFileSync(path.join(root, version, file), 'utf8')) as unknown;
}
function serveFixtures(version: string): string[] {
  return fs.readdirSync(path.join(root, version)).filter((f) => {
    if (!f.endsWith('.json') || f === 'index.json') return false;
    const body = load(version, f);
    return typeof body === 'object' && body !== null && 'applications' in body;
  });
}
const app = (p: ParsedServe, name: string) => p.apps.find((a) => a.name === name);
const dep = (p: ParsedServe, a: string, d: string) => app(p, a)?.deployments.find((x) => x.name === d);

// What each recorded state must parse to. Applied to every Ray version that has the file.
const expectations: Record<string, (p: ParsedServe, version: string) => void> = {
  'serve-not-started.json': (p) => expect(p.apps).toEqual([]),
  'serve-all-apps-deleted.json': (p) => expect(p.apps).toEqual([]),
  'app-deploying.json': (p) => expect(app(p, 'two-step')?.status).toBe('DEPLOYING'),
  'app-running.json': (p) => {
    expect(app(p, 'two-step')?.status).toBe('RUNNING');
    expect(dep(p, 'two-step', 'Front')?.replicas.RUNNING).toBe(1);
    expect(dep(p, 'two-step', 'Worker')).toMatchObject({ minReplicas: 0, maxReplicas: 2, autoscaling: true, scaledToZero: false });
    expect(p.proxies.some((x) => x.head)).toBe(true);
  },
  'worker-downscaling.json': (p) => {
    expect(dep(p, 'two-step', 'Worker')?.status).toBe('DOWNSCALING');
    expect(app(p, 'two-step')?.status).toBe('RUNNING');
  },
  'worker-scaled-to-zero.json': (p) => {
    expect(app(p, 'two-step')?.status).toBe('RUNNING');
    const w = dep(p, 'two-step', 'Worker');
    expect(w).toMatchObject({ status: 'HEALTHY', targetReplicas: 0, scaledToZero: true });
    expect(Object.values(w?.replicas ?? {}).reduce((a, b) => a + b, 0)).toBe(0);
    expect(dep(p, 'two-step', 'Front')?.scaledToZero).toBe(false);
  },
  'worker-upscaling.json': (p) => {
    expect(dep(p, 'two-step', 'Worker')).toMatchObject({ status: 'UPSCALING', scaledToZero: false });
  },
  'worker-upscaled.json': (p) => expect(dep(p, 'two-step', 'Worker')?.replicas.RUNNING).toBeGreaterThanOrEqual(1),
  'app-bad-import-deploy-failed.json': (p) => expect(app(p, 'bad-import')).toMatchObject({ status: 'DEPLOY_FAILED', messagePresent: true, deployments: [] }),
  'app-crash-on-start-failed.json': (p, version) => {
    expect(app(p, 'crash-on-start')?.status).toBe('DEPLOY_FAILED');
    // Deployment-level DEPLOY_FAILED exists from Ray 2.41 (PR #49178); 2.40 says UNHEALTHY.
    expect(dep(p, 'crash-on-start', 'Crasher')?.status).toBe(version === '2.40' ? 'UNHEALTHY' : 'DEPLOY_FAILED');
  },
  'app-unhealthy.json': (p) => expect(app(p, 'turns-sick')?.status).toBe('UNHEALTHY'),
  'app-deleting.json': (p) => expect(app(p, 'two-step')?.status).toBe('DELETING'),
  'app-deleted.json': (p) => expect(app(p, 'two-step')).toBeUndefined(),
};

describe.each(versions)('recorded Ray %s answers', (version) => {
  const files = serveFixtures(version);

  it('has recordings of the key states', () => {
    for (const f of ['app-running.json', 'worker-scaled-to-zero.json', 'app-bad-import-deploy-failed.json']) expect(files).toContain(f);
  });

  it.each(files)('%s parses without malformed entries', (file) => {
    const p = parseServeInstance(load(version, file));
    expect(p.malformed).toEqual([]);
    expectations[file]?.(p, version);
  });

  it('renders every recording promtool-clean, with explicit zeros and no ghosts', async () => {
    const up = await startUpstream(json({}));
    const h = exporterWithConfig(`ray_clusters:\n  - name: rec\n    dashboard_url: ${up.url}\n    interval: 1h\n    proxy_probe: {enabled: false}\n`);
    h.exporter.start();
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fx-'));
    try {
      for (const file of files) {
        const body = load(version, file) as { applications: Record<string, unknown> };
        up.set(json(body));
        await h.exporter.sampleAll();
        const text = await scrapeText(h.exporter.metrics);
        expect(seriesValue(text, 'hypha_serve_source_up', { ray_cluster: 'rec' })).toBe(1);
        // Exactly the recorded apps, each with a full state set.
        const names = Object.keys(body.applications);
        expect(seriesCount(text, 'hypha_serve_app_status')).toBe(names.length * 6);
        const f = path.join(tmp, `${file}.txt`);
        fs.writeFileSync(f, text);
        expect(execFileSync('sh', ['-c', `promtool check metrics < '${f}' 2>&1; echo rc=$?`]).toString().trim()).toBe('rc=0');
      }
    } finally {
      await h.close();
      await up.close();
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });
});

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AppRegistration } from '../../src/snapshot/registration';
import { hyphaParts } from '../helpers/hypha-snapshot';
import { newSourceHealth, RayClusterSample, Snapshot } from '../../src/snapshot/types';
import { renderSnapshot } from '../helpers/exporter';
import { seriesCount, seriesValue } from '../helpers/exposition';

// The registration families' label sets are the alerts' identity.

function ray(cluster: string, up = true): RayClusterSample {
  return { cluster, health: { ...newSourceHealth('ray', cluster), up }, state: { apps: [], proxies: [], appsDropped: 0 }, appsDroppedTotal: 0, malformedTotal: 0 };
}

function reg(over: Partial<AppRegistration>): AppRegistration {
  return {
    cluster: 'A', app: 'x', hypha: 'main', workspace: 'bio', service: 'bio/w-a-1234abcd:x', registered: false, state: 'missing_scaled_to_zero',
    unregisteredSinceSeconds: 1000, clientIdMismatch: false, clientIdChangesTotal: 0, settled: true,
    ...over,
  };
}

function snapshot(apps: AppRegistration[], hyphaUp = true, rayUp = true): Snapshot {
  const hypha = hyphaParts({
    target: 'main', up: hyphaUp, apps,
    workers: [
      { worker: 'bio/w-a:bioengine-worker', workspace: 'bio', clientId: 'w-a', up: true, rayCluster: 'A', apps: [{ app: 'x', status: 'RUNNING' }] },
      { worker: 'bio/w-z:bioengine-worker', workspace: 'bio', clientId: 'w-z', up: true, apps: [{ app: 'x', status: 'RUNNING', serviceRegistered: true }] },
    ],
  });
  return { version: 1, ray: new Map([['A', ray('A', rayUp)], ['B', ray('B')]]), ...hypha };
}

function render(s: Snapshot): Promise<string> {
  return renderSnapshot(s);
}

describe('registration metrics', () => {
  it('identity is (ray_cluster, app, hypha); the expected service is an info series', async () => {
    const text = await render(snapshot([reg({}), reg({ cluster: 'B', service: 'bio/*:x', state: 'registered', registered: true, unregisteredSinceSeconds: undefined })]));
    expect(seriesValue(text, 'hypha_serve_app_registered', { ray_cluster: 'A', app: 'x', hypha: 'main' })).toBe(0);
    expect(text).not.toMatch(/hypha_serve_app_registered\{[^}]*service=/);
    expect(seriesValue(text, 'hypha_serve_app_expected_service_info', { ray_cluster: 'A', app: 'x', hypha: 'main', workspace: 'bio', service: 'bio/w-a-1234abcd:x' })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_app_registration_state', { ray_cluster: 'A', app: 'x', state: 'missing_scaled_to_zero' })).toBe(1);
    // Every state is emitted, the new ones included.
    expect(seriesCount(text, 'hypha_serve_app_registration_state', { ray_cluster: 'A', app: 'x' })).toBe(8);
    expect(seriesValue(text, 'hypha_serve_app_registration_state', { ray_cluster: 'A', app: 'x', state: 'not_running' })).toBe(0);
    expect(seriesValue(text, 'hypha_serve_app_unregistered_since_timestamp_seconds', { ray_cluster: 'A', app: 'x' })).toBe(1000);
    expect(seriesValue(text, 'hypha_serve_app_registered', { ray_cluster: 'B', app: 'x' })).toBe(1);
  });

  it('not_running is not missing: no unregistered_since', async () => {
    const text = await render(snapshot([reg({ state: 'not_running', unregisteredSinceSeconds: undefined })]));
    expect(seriesValue(text, 'hypha_serve_app_registration_state', { ray_cluster: 'A', state: 'not_running' })).toBe(1);
    expect(seriesCount(text, 'hypha_serve_app_unregistered_since_timestamp_seconds')).toBe(0);
  });

  it('unknown is absent, never 0: Ray of the app down, or Hypha down', async () => {
    let text = await render(snapshot([reg({})], true, false));
    expect(seriesCount(text, 'hypha_serve_app_registered', { ray_cluster: 'A' })).toBe(0);
    expect(seriesCount(text, 'hypha_serve_app_registration_state', { ray_cluster: 'A' })).toBe(0);
    text = await render(snapshot([reg({})], false, true));
    expect(seriesCount(text, 'hypha_serve_app_registered')).toBe(0);
    expect(seriesCount(text, 'hypha_serve_worker_app_status')).toBe(0);
  });

  it('worker series carry the attributed ray_cluster, empty when unattributable', async () => {
    const text = await render(snapshot([reg({})]));
    expect(seriesValue(text, 'hypha_serve_worker_app_status', { worker: 'bio/w-a:bioengine-worker', ray_cluster: 'A', app: 'x', status: 'RUNNING', hypha: 'main' })).toBe(1);
    expect(text).toMatch(/hypha_serve_worker_app_status\{hypha="main",worker="bio\/w-z:bioengine-worker",ray_cluster="",app="x",status="RUNNING"\} 1/);
    expect(seriesValue(text, 'hypha_serve_worker_app_service_registered', { worker: 'bio/w-z:bioengine-worker' })).toBe(1);
    expect(seriesCount(text, 'hypha_serve_worker_app_service_registered', { worker: 'bio/w-a:bioengine-worker' })).toBe(0);
  });

  it('passes promtool check metrics', async () => {
    const text = await render(snapshot([reg({}), reg({ app: 'we"ird\\\napp' })]));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-'));
    const f = path.join(dir, 'metrics.txt');
    fs.writeFileSync(f, text);
    const out = execFileSync('sh', ['-c', `promtool check metrics < ${f} 2>&1; echo rc=$?`]).toString();
    fs.rmSync(dir, { recursive: true, force: true });
    expect(out.trim()).toBe('rc=0');
  });
});

import { ensureBuilt, runCli } from '../helpers/cli';
import { tmpDir } from '../helpers/tmp';
import { spawnExporter } from '../harness/exporter-process';
import { waitFor } from '../harness/proc';

describe('CLI', () => {
  const t = tmpDir();
  afterAll(() => t.cleanup());
  beforeAll(() => ensureBuilt());

  it('--help and --version exit 0', async () => {
    const h = await runCli(['--help']);
    expect(h.code).toBe(0);
    expect(h.stdout).toContain('--config.file');
    const v = await runCli(['--version']);
    expect(v.code).toBe(0);
    expect(v.stdout).toMatch(/^hypha-serve-exporter \d+\.\d+\.\d+/);
  });

  it.each([
    ['unknown flag', ['--nope'], /unknown flag --nope/],
    ['bad log level', ['--log.level=loud'], /log\.level/],
  ])('%s: exit 2 with one clear line', async (_n, args, re) => {
    const r = await runCli(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(re);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it.each([
    ['YAML syntax', 'ray_clusters: [\n', /c\.yml:\d+:\d+: YAML syntax/],
    ['unknown key', 'ray_clusterz: []\n', /c\.yml:1:1: ray_clusterz: unknown key/],
    ['wrong type', 'ray_clusters:\n  - name: a\n    dashboard_url: http://h:1\n    interval: 5\n', /c\.yml:4:\d+: ray_clusters\[0\]\.interval:/],
    ['bad URL', 'ray_clusters:\n  - name: a\n    dashboard_url: "not a url"\n', /c\.yml:3:\d+: ray_clusters\[0\]\.dashboard_url: must be an http/],
    ['missing token file', 'ray_clusters:\n  - name: a\n    dashboard_url: http://h:1\n    bearer_token_file: /nonexistent/t\n', /c\.yml:4:\d+: ray_clusters\[0\]\.bearer_token_file: cannot read token file/],
  ])('bad config (%s): exit 2, file:line:col field: problem', async (_n, text, re) => {
    const file = t.write('c.yml', text as string);
    const r = await runCli([`--config.file=${file}`, '--web.listen-address=127.0.0.1:0']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(re as RegExp);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('serves endpoints, reloads on SIGHUP and POST /-/reload, keeps the old config on a bad one', async () => {
    const file = t.write('ok.yml', 'ray_clusters:\n  - name: one\n    dashboard_url: http://127.0.0.1:9\n    interval: 1h\n');
    const ex = await spawnExporter({ name: 'cli-exporter', config: { file }, logLevel: 'info', waitReady: false });
    const base = ex.url;
    try {
      await waitFor('listening', async () => (await fetch(`${base}/-/healthy`)).ok, 10000);
      await waitFor('ready', async () => (await fetch(`${base}/-/ready`)).ok, 10000);
      expect(await (await fetch(`${base}/`)).text()).toContain('hypha-serve-exporter');
      expect((await fetch(`${base}/-/reload`)).status).toBe(405);
      const m = await (await fetch(`${base}/metrics`)).text();
      expect(m).toContain('hypha_serve_source_up{source="ray",ray_cluster="one",hypha="",service=""} 0');

      t.write('ok.yml', 'ray_clusters:\n  - name: two\n    dashboard_url: http://127.0.0.1:9\n    interval: 1h\n');
      ex.reload();
      await waitFor('SIGHUP reload', async () => (await (await fetch(`${base}/metrics`)).text()).includes('ray_cluster="two"'), 10000);

      t.write('ok.yml', 'ray_clusters: {broken\n');
      const bad = await fetch(`${base}/-/reload`, { method: 'POST' });
      expect(bad.status).toBe(500);
      expect(await bad.text()).toMatch(/previous configuration kept.*ok\.yml:\d+:\d+/);
      const after = await (await fetch(`${base}/metrics`)).text();
      expect(after).toContain('hypha_serve_exporter_config_last_reload_successful 0');
      expect(after).toContain('ray_cluster="two"');

      t.write('ok.yml', 'ray_clusters:\n  - name: three\n    dashboard_url: http://127.0.0.1:9\n    interval: 1h\n');
      expect((await fetch(`${base}/-/reload`, { method: 'POST' })).status).toBe(200);
      const ok = await (await fetch(`${base}/metrics`)).text();
      expect(ok).toContain('hypha_serve_exporter_config_last_reload_successful 1');
      expect(ok).not.toContain('ray_cluster="two"');
    } finally {
      await ex.stop();
    }
    expect(ex.proc.output()).toContain('configuration reload failed');
  }, 30000);
});

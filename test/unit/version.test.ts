/**
 * One version, said the same everywhere: package.json, package-lock.json, what the exporter reports
 * (src/util/version.ts → --version, hypha_serve_exporter_build_info), the chart's appVersion and the top entry
 * of CHANGELOG.md. A bump that forgets one of them (0.1.0 shipped contract v0.2) fails here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config/load';
import { VERSION } from '../../src/util/version';

const root = path.join(__dirname, '..', '..');
const read = (f: string) => fs.readFileSync(path.join(root, f), 'utf8');

interface ChangelogEntry {
  version: string;
  date?: string;
  body: string;
}

/** `## [x.y.z] - YYYY-MM-DD` sections in file order (Keep a Changelog); `[Unreleased]` is skipped. */
function changelogEntries(text: string): ChangelogEntry[] {
  const out: ChangelogEntry[] = [];
  const re = /^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?[ \t]*$/gm;
  const heads = [...text.matchAll(re)];
  heads.forEach((m, i) => {
    const end = i + 1 < heads.length ? heads[i + 1].index : text.length;
    if (m[1].toLowerCase() !== 'unreleased') out.push({ version: m[1], date: m[2], body: text.slice(m.index + m[0].length, end) });
  });
  return out;
}

describe('version', () => {
  const pkg = JSON.parse(read('package.json')) as { version: string };
  const lock = JSON.parse(read('package-lock.json')) as { version: string; packages: Record<string, { version?: string }> };
  const changelog = read('CHANGELOG.md');

  it('package.json, package-lock.json and src/util/version.ts agree', () => {
    expect(pkg.version).toMatch(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
    expect(lock.version).toBe(pkg.version);
    expect(lock.packages[''].version).toBe(pkg.version);
    expect(VERSION).toBe(pkg.version);
  });

  it("the chart's appVersion is the package version", () => {
    const chart = parse(read('deploy/helm/hypha-serve-exporter/Chart.yaml')) as { appVersion: string };
    expect(String(chart.appVersion)).toBe(pkg.version);
  });

  it("CHANGELOG.md's top entry is the package version, dated, with upgrade notes and a link", () => {
    const entries = changelogEntries(changelog);
    expect(entries.length).toBeGreaterThan(0);
    const top = entries[0];
    expect(top.version).toBe(pkg.version);
    expect(top.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    // Entries newest first, each version once, each with its link reference at the bottom.
    const versions = entries.map((e) => e.version);
    expect(new Set(versions).size).toBe(versions.length);
    const key = (v: string) => v.split(/[.-]/).slice(0, 3).map(Number);
    for (let i = 1; i < versions.length; i++) {
      const [a, b] = [key(versions[i - 1]), key(versions[i])];
      expect(a[0] * 1e6 + a[1] * 1e3 + a[2]).toBeGreaterThan(b[0] * 1e6 + b[1] * 1e3 + b[2]);
    }
    for (const v of versions) expect(changelog).toMatch(new RegExp(`^\\[${v.replace(/\./g, '\\.')}\\]: https://\\S+$`, 'm'));
    // A 0.x minor release may change the metric contract; this one did, so it must say how to upgrade.
    expect(top.body).toMatch(/^### Upgrade notes$/m);
  });

  it('the 0.2.0 upgrade notes name every renamed label and recording rule of contract v0.2', () => {
    const entry = changelogEntries(changelog).find((e) => e.version === '0.2.0');
    expect(entry).toBeDefined();
    const body = entry!.body;
    expect(body).toContain('`cluster` | `ray_cluster`');
    expect(body).toContain('source="hypha_service"');
    // Every recording rule whose first level is ray_cluster* is either renamed (listed with its old name)
    // or new in 0.2.0; the renamed ones keep the rest of their name.
    for (const old of ['cluster:hypha_serve_proxy_ready:sum',
      'cluster:hypha_serve_deployment_scaled_to_zero:sum', 'cluster_app_deployment:hypha_serve_deployment_replicas:target_minus_running']) {
      expect(body).toContain(`| \`${old}\` | \`ray_${old}\``);
      // Removed since, for no dashboard or alert read it: docs/alerts.md names it with the removed rules.
      expect(read('rules/recording.yml') + read('rules/alerts.yml')).not.toContain(`record: ray_${old}`);
      expect(read('docs/alerts.md').split('Removed in v0.4')[1] ?? '').toContain(`\`ray_${old}\``);
    }
  });

  it("0.1.0's full example config still loads, as the upgrade notes say (its deprecated key included)", () => {
    const file = path.join(root, 'test/fixtures/config/full-0.1.0.yml');
    expect(fs.readFileSync(file, 'utf8')).toMatch(/reresolve_after: 10m/);
    const config = loadConfig(file, { RAY_DASHBOARD_TOKEN: 'ray-secret', HYPHA_TOKEN: 'hypha-secret' });
    expect(config.rayClusters.map((c) => c.name)).toHaveLength(1);
    expect(config.hyphaServers).toHaveLength(1);
    expect(config.watchedServices[0].canary.deprecatedReresolveAfter).toBe('10m');
    expect(config.watchedServices[0].canary.witnessMaxMs).toBe(600_000);
    expect(changelog).toContain('a 0.1.0 config file loads unchanged');
  });

  it('the parser reads headings as Keep a Changelog writes them (negative controls)', () => {
    const text = '# Changelog\n\n## [Unreleased]\n\n- x\n\n## [1.2.0] - 2026-01-02\n\n### Upgrade notes\n\n## [1.1.0] - 2025-12-01\n\n- y\n';
    expect(changelogEntries(text).map((e) => [e.version, e.date])).toEqual([['1.2.0', '2026-01-02'], ['1.1.0', '2025-12-01']]);
    expect(changelogEntries(text)[0].body).toContain('### Upgrade notes');
    // A level-3 heading or a heading without brackets is not an entry.
    expect(changelogEntries('### [9.9.9] - 2026-01-01\n## 9.9.8\n')).toEqual([]);
  });
});

/**
 * The rule engines and the Alertmanager beside Prometheus that the rules pack is proven on (issue 25),
 * built by scripts/setup-engines.sh into the cache dir the machine keeps: Thanos (sidecar, query,
 * rule), VictoriaMetrics (single node, vmalert, vmalert-tool), Alertmanager 0.35 with amtool, and the
 * Prometheus Operator that renders the chart's monitoring objects (issue 38).
 *
 * As with Prometheus 3 (prometheus-versions.ts): outside CI a missing build leaves that engine out
 * (a developer without Go can still run the suite, and each test that leaves one out says so on
 * stdout). In CI (CI=true) or with HSE_REQUIRE_ENGINES=1 (scripts/test.sh sets it, because its setup
 * step builds them) every engine is always listed, so every test that uses one fails loudly, and
 * requireEngine() throws with the reason.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Pinned versions; must agree with scripts/setup-engines.sh. */
export const ENGINE_VERSIONS = {
  thanos: 'v0.42.4',
  victoriametrics: 'v1.151.0',
  alertmanager: 'v0.35.0',
  'prometheus-operator': 'v0.85.0',
} as const;

export type EngineName = keyof typeof ENGINE_VERSIONS;

/** The binaries each engine's build leaves in its bin dir. */
const BINARIES = {
  thanos: ['thanos'],
  victoriametrics: ['victoria-metrics', 'vmalert', 'vmalert-tool'],
  alertmanager: ['alertmanager', 'amtool'],
  'prometheus-operator': ['operator'],
} as const satisfies Record<EngineName, readonly string[]>;

export type EngineBinary<E extends EngineName> = (typeof BINARIES)[E][number];

/** Cache dir name of each engine: <name>-<version>, as scripts/setup-engines.sh writes it. */
const DIR_NAMES: Record<EngineName, string> = {
  thanos: `thanos-${ENGINE_VERSIONS.thanos}`,
  victoriametrics: `victoriametrics-${ENGINE_VERSIONS.victoriametrics}`,
  alertmanager: `alertmanager-${ENGINE_VERSIONS.alertmanager}`,
  'prometheus-operator': `prometheus-operator-${ENGINE_VERSIONS['prometheus-operator']}`,
};

/**
 * ${XDG_CACHE_HOME:-$HOME/.cache}/hypha-serve-exporter: where scripts/setup-engines.sh and
 * scripts/setup-prometheus3.sh build by default (the cache dir CI keeps between runs).
 */
export function buildCacheDir(): string {
  const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(cache, 'hypha-serve-exporter');
}

/** $ENGINES_CACHE_DIR, else buildCacheDir() (as scripts/setup-engines.sh). */
export function enginesCacheDir(): string {
  return process.env.ENGINES_CACHE_DIR || buildCacheDir();
}

export function engineBinDir(e: EngineName): string {
  return path.join(enginesCacheDir(), DIR_NAMES[e], 'bin');
}

/** The operator's CRDs (all of them, from the same module as its binary), copied beside its bin dir. */
export function operatorCrdsDir(): string {
  return path.join(path.dirname(engineBinDir('prometheus-operator')), 'crds');
}

/** Absolute path of one binary of an engine's build (whether or not it is there). */
export function engineBinary<E extends EngineName>(e: E, binary: EngineBinary<E>): string {
  return path.join(engineBinDir(e), binary);
}

/** True in CI and when scripts/test.sh asks for it: a missing build is then a failure. */
export function enginesRequired(): boolean {
  return process.env.CI === 'true' || process.env.HSE_REQUIRE_ENGINES === '1';
}

/** Those of `paths` that are not executable files (for the "not built" messages). */
export function absentBinaries(paths: readonly string[]): string[] {
  return paths.filter((p) => {
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return !fs.statSync(p).isFile();
    } catch {
      return true;
    }
  });
}

/** Why an engine cannot be used, or undefined when all its binaries are there. */
export function engineMissing(e: EngineName): string | undefined {
  const absent = absentBinaries(BINARIES[e].map((b) => path.join(engineBinDir(e), b)));
  if (absent.length === 0) return undefined;
  return `${e} ${ENGINE_VERSIONS[e]} not built: missing ${absent.join(', ')} (run: bash scripts/setup-engines.sh)`;
}

/** Whether the tests run on this engine: when built, and always when required (a missing build then fails them). */
export function engineListed(e: EngineName): boolean {
  return engineMissing(e) === undefined || enginesRequired();
}

/**
 * For the start of a test that uses the engine: throws (with the setup hint) when it is absent, so
 * a required engine never passes unbuilt.
 */
export function assertEngine(e: EngineName): void {
  const missing = engineMissing(e);
  if (missing !== undefined) throw new Error(missing);
}

/**
 * True when built. False when absent and not required, after saying on stdout what this run did
 * not check; throws when absent and required (CI, scripts/test.sh).
 */
export function requireEngine(e: EngineName, what: string): boolean {
  const missing = engineMissing(e);
  if (missing === undefined) return true;
  if (enginesRequired()) throw new Error(missing);
  process.stdout.write(`[engines] NOT checked on ${e} ${ENGINE_VERSIONS[e]}: ${what} (${missing})\n`);
  return false;
}

/** An Alertmanager build the tests run: Debian's 0.25 always, 0.35 from scripts/setup-engines.sh when listed. */
export interface AlertmanagerVersion {
  /** Short name for test titles: "0.25" or "0.35". */
  label: string;
  alertmanager: string;
  amtool: string;
}

export const DEBIAN_ALERTMANAGER: AlertmanagerVersion = {
  label: '0.25',
  alertmanager: '/usr/bin/prometheus-alertmanager',
  amtool: '/usr/bin/amtool',
};

export function alertmanager035(): AlertmanagerVersion {
  return { label: '0.35', alertmanager: engineBinary('alertmanager', 'alertmanager'), amtool: engineBinary('alertmanager', 'amtool') };
}

/** Debian 0.25, then 0.35 when built or required. */
export function alertmanagerVersions(): AlertmanagerVersion[] {
  return engineListed('alertmanager') ? [DEBIAN_ALERTMANAGER, alertmanager035()] : [DEBIAN_ALERTMANAGER];
}

/**
 * The Prometheus versions the rules and the incident replays are checked against:
 * Debian bookworm's 2.42 (always) and Prometheus 3 built from the Go module proxy by
 * scripts/setup-prometheus3.sh into a cache dir the machine keeps.
 *
 * Outside CI a missing 3.x build drops that entry (a developer without Go can still run the
 * suite on 2.42). In CI (CI=true) or with HSE_REQUIRE_PROMETHEUS3=1 (scripts/test.sh sets it,
 * because its setup step builds 3.x) the entry is always returned, so every test parametrised
 * over it fails loudly, and requirePrometheus3() throws with the reason.
 */
import path from 'node:path';
import { absentBinaries, buildCacheDir } from './engines';

export interface PrometheusVersion {
  /** Short name for test titles, e.g. "2.42" or "3.16". */
  label: string;
  /** Absolute path of the prometheus server binary. */
  prometheus: string;
  /** Absolute path of the matching promtool. */
  promtool: string;
}

/** Go module version scripts/setup-prometheus3.sh builds; module v0.3XX.Y is Prometheus 3.XX.Y. */
export const PROMETHEUS3_MODULE_VERSION = 'v0.316.0';
/** What `prometheus --version` of that build reports. */
export const PROMETHEUS3_VERSION = '3.16.0';

export const DEBIAN_PROMETHEUS: PrometheusVersion = {
  label: '2.42',
  prometheus: '/usr/bin/prometheus',
  promtool: '/usr/bin/promtool',
};

/**
 * Where scripts/setup-prometheus3.sh puts the 3.x binaries. Must agree with that script:
 * $PROMETHEUS3_BIN_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/hypha-serve-exporter/prometheus-<module version>/bin.
 */
export function prometheus3BinDir(): string {
  return process.env.PROMETHEUS3_BIN_DIR || path.join(buildCacheDir(), `prometheus-${PROMETHEUS3_MODULE_VERSION}`, 'bin');
}

export function prometheus3(): PrometheusVersion {
  const dir = prometheus3BinDir();
  return { label: PROMETHEUS3_VERSION.split('.').slice(0, 2).join('.'), prometheus: path.join(dir, 'prometheus'), promtool: path.join(dir, 'promtool') };
}

/** True in CI and when scripts/test.sh asks for it: a missing 3.x build is then a failure. */
export function prometheus3Required(): boolean {
  return process.env.CI === 'true' || process.env.HSE_REQUIRE_PROMETHEUS3 === '1';
}

/** Why the 3.x build cannot be used, or undefined when both binaries are there. */
export function prometheus3Missing(): string | undefined {
  const v = prometheus3();
  const absent = absentBinaries([v.prometheus, v.promtool]);
  if (absent.length === 0) return undefined;
  return `Prometheus ${PROMETHEUS3_VERSION} not built: missing ${absent.join(', ')} (run: bash scripts/setup-prometheus3.sh)`;
}

/** Debian 2.42 always; 3.x when built, or when required (then a missing build fails the tests that use it). */
export function prometheusVersions(): PrometheusVersion[] {
  const out = [DEBIAN_PROMETHEUS];
  if (prometheus3Missing() === undefined || prometheus3Required()) out.push(prometheus3());
  return out;
}

/**
 * For a test that must fail when 3.x is required but absent (CI); outside CI it returns
 * undefined when absent so the caller can say what it did not check.
 */
export function requirePrometheus3(): PrometheusVersion | undefined {
  const missing = prometheus3Missing();
  if (missing === undefined) return prometheus3();
  if (prometheus3Required()) throw new Error(missing);
  return undefined;
}

/** Throws (with the setup hint) when a version's binaries are absent; call at the start of a parametrised test. */
export function assertPrometheusBinaries(v: PrometheusVersion): void {
  const absent = absentBinaries([v.prometheus, v.promtool]);
  if (absent.length) throw new Error(`Prometheus ${v.label}: ${absent.join(', ')} missing or not executable (run: bash scripts/setup.sh)`);
}

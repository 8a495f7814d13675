/**
 * Thanos (v0.42.4, scripts/setup-engines.sh) as a rule engine for the shipped pack: a Prometheus that
 * only scrapes (no rules), its `thanos sidecar`, a `thanos query` reading the sidecar AND the ruler's
 * StoreAPI, and a stateful `thanos rule` evaluating the rule files through that querier and sending
 * to an Alertmanager. The ruler's own writes (recording rules, ALERTS) are in its local TSDB; a rule
 * sees them only because the querier reads the ruler's store too (thanos-io/thanos#3170). Every
 * process on free loopback ports, ended by PID.
 */
import { assertEngine, engineBinary, ENGINE_VERSIONS } from './engines';
import { RuleEngineOptions, waitReady, waitRulesHealthy, withTeardown } from './engine-api';
import { freePorts } from './ports';
import { PrometheusServer, startPrometheus } from './prometheus';
import { startProc, waitFor } from './proc';

/** The external label the sidecar needs on its Prometheus (it refuses one without any): a cluster name, as in production. */
export const THANOS_EXTERNAL_LABELS = { cluster: 'e2e' } as const;

/** The ruler's --eval-interval is `evaluationInterval` (the binary's default is 1m). */
export type ThanosRulerOptions = RuleEngineOptions;

export interface ThanosRuler {
  /** The scraping Prometheus (no rules). */
  prometheus: PrometheusServer;
  /** http://host:port of `thanos query` (Prometheus query API over the sidecar and the ruler). */
  queryUrl: string;
  /** http://host:port of `thanos rule` (its /api/v1/rules and /api/v1/alerts). */
  ruleUrl: string;
  /** e.g. "0.42.4". */
  version: string;
  stop(): Promise<void>;
}

interface StoreStatus {
  name: string;
  lastError: string | null;
}

export async function startThanosRuler(o: ThanosRulerOptions): Promise<ThanosRuler> {
  assertEngine('thanos');
  const thanos = engineBinary('thanos', 'thanos');
  return withTeardown('thanos-', async (dir, t) => {
    const prometheus = await startPrometheus({
      scrapeTargets: [{ job: o.job, targets: o.exporterTargets, honorLabels: true }],
      scrapeInterval: o.scrapeInterval,
      externalLabels: { ...THANOS_EXTERNAL_LABELS },
    });
    t.add(() => prometheus.stop());
    const [sidecarGrpc, sidecarHttp, queryGrpc, queryHttp, ruleGrpc, ruleHttp] = await freePorts(6);
    const at = (p: number) => `127.0.0.1:${p}`;

    const sidecar = startProc('thanos-sidecar', thanos, [
      'sidecar', `--tsdb.path=${prometheus.dataDir}`, `--prometheus.url=${prometheus.url}`,
      `--grpc-address=${at(sidecarGrpc)}`, `--http-address=${at(sidecarHttp)}`, '--log.level=warn',
    ]);
    t.add(() => sidecar.stop());
    const query = startProc('thanos-query', thanos, [
      'query', `--grpc-address=${at(queryGrpc)}`, `--http-address=${at(queryHttp)}`,
      // The endpoint config (--endpoint is deprecated in 0.42): the sidecar, and the ruler's StoreAPI.
      `--endpoint.sd-config=${JSON.stringify({ endpoints: [{ address: at(sidecarGrpc) }, { address: at(ruleGrpc) }] })}`, '--log.level=warn',
    ]);
    t.add(() => query.stop());
    const queryUrl = `http://${at(queryHttp)}`;
    const rule = startProc('thanos-rule', thanos, [
      'rule', `--data-dir=${dir}/rule`, ...o.ruleFiles.map((f) => `--rule-file=${f}`),
      `--eval-interval=${o.evaluationInterval}`, `--query=${queryUrl}`, `--alertmanagers.url=${o.alertmanagerUrl}`,
      // A ruler's external label, as every ruler has one to tell its blocks apart; it is added to its alerts.
      '--label=ruler="e2e"',
      `--grpc-address=${at(ruleGrpc)}`, `--http-address=${at(ruleHttp)}`, '--log.level=warn',
    ]);
    t.add(() => rule.stop());
    const ruleUrl = `http://${at(ruleHttp)}`;
    await waitReady('thanos sidecar', sidecar, `http://${at(sidecarHttp)}/-/ready`);
    await waitReady('thanos query', query, `${queryUrl}/-/ready`);
    await waitReady('thanos rule', rule, `${ruleUrl}/-/ready`);
    await prometheus.waitForTargetsUp(60_000, o.job);
    // The querier must read both stores, or a rule reading a recorded series sees nothing.
    await waitFor('thanos query reads the sidecar and the ruler', async () => {
      const r = (await (await fetch(`${queryUrl}/api/v1/stores`)).json()) as { data?: Record<string, StoreStatus[]> };
      const ok = (kind: string) => (r.data?.[kind] ?? []).some((s) => s.lastError === null || s.lastError === '');
      return ok('sidecar') && ok('rule');
    }, 60_000, 500);
    // The ruler's first evaluations fail while the querier has no store; wait until none does.
    await waitRulesHealthy('thanos rule', ruleUrl);
    return { prometheus, queryUrl, ruleUrl, version: ENGINE_VERSIONS.thanos.replace(/^v/, ''), stop: () => t.run() };
  });
}

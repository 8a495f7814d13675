import { Router } from 'express';
import type { Exporter } from '../exporter/exporter';
import type { Logger } from '../util/log';
import { buildStatus } from '../status-page/build';
import { REVISION, VERSION } from '../util/version';

/** GET /api/v1/status: the status page's data as versioned JSON (docs/status-api.schema.json). */
export function statusApiRouter(exporter: Exporter, log: Logger): Router {
  const r = Router();
  r.get('/api/v1/status', (_req, res) => {
    try {
      const body = buildStatus({
        snapshot: exporter.store.get(),
        transitions: exporter.transitions.list(),
        transitionsCapacity: exporter.transitions.capacity,
        ready: exporter.ready,
        version: VERSION,
        revision: REVISION,
        now: Date.now() / 1000,
      });
      res.set({
        'Cache-Control': 'no-store',
        'X-Content-Type-Options': 'nosniff',
        'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
      }).type('application/json; charset=utf-8').send(JSON.stringify(body));
    } catch (e) {
      log.error({ error: (e as Error).message }, 'building /api/v1/status failed');
      res.status(500).type('application/json').send(JSON.stringify({ version: 1, error: 'internal error building the status' }));
    }
  });
  return r;
}

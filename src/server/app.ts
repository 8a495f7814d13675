import express, { Express, NextFunction, Request, Response } from 'express';
import type { Exporter } from '../exporter/exporter';
import type { Logger } from '../util/log';
import { statusPageRouter } from './status-page-routes';
import { statusApiRouter } from './status-api';
import { negotiateEncoding, negotiateFormat } from '../metrics/negotiate';

/** HTTP endpoints. Nothing here waits on an upstream: all answers come from the snapshot. */
export function createApp(exporter: Exporter, log: Logger, opts: { gate?: (req: Request, res: Response, next: NextFunction) => void } = {}): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // Every endpoint, /-/reload included, is behind the web config's headers, rate limit and basic auth (web-gate.ts).
  if (opts.gate) app.use(opts.gate);

  // express 4 ignores a handler's promise; the handler catches everything itself, so `void` is safe.
  app.get('/metrics', (req: Request, res: Response) => void serveMetrics(req, res));
  async function serveMetrics(req: Request, res: Response): Promise<void> {
    try {
      const body = await exporter.metrics.scrape(negotiateFormat(req.get('accept')), negotiateEncoding(req.get('accept-encoding')));
      res.set('Content-Type', body.contentType);
      res.set('Vary', 'Accept, Accept-Encoding');
      if (body.encoding === 'gzip') res.set('Content-Encoding', 'gzip');
      res.set('Content-Length', String(body.bytes));
      if (req.method === 'HEAD') {
        res.end();
        return;
      }
      // Corked: the head and the few body buffers leave in one writev (end() uncorks).
      res.cork();
      for (const c of body.chunks) res.write(c);
      res.end();
    } catch (e) {
      log.error({ error: (e as Error).message }, 'rendering /metrics failed');
      res.status(500).type('text/plain').send('internal error rendering metrics\n');
    }
  }
  app.get('/-/healthy', (_req, res) => {
    res.type('text/plain').send('Healthy.\n');
  });
  app.get('/-/ready', (_req, res) => {
    if (exporter.ready) res.type('text/plain').send('Ready.\n');
    else res.status(503).type('text/plain').send('Not ready: first sample in progress.\n');
  });
  app.post('/-/reload', (_req, res) => {
    const r = exporter.reload();
    if (r.ok) res.type('text/plain').send('Reloaded.\n');
    else res.status(500).type('text/plain').send(`Reload failed, previous configuration kept: ${r.error}\n`);
  });
  app.all('/-/reload', (_req, res) => {
    res.status(405).set('Allow', 'POST').type('text/plain').send('Only POST is allowed.\n');
  });
  app.use(statusPageRouter());
  app.use(statusApiRouter(exporter, log));
  app.use((_req, res) => {
    res.status(404).type('text/plain').send('Not found.\n');
  });
  return app;
}

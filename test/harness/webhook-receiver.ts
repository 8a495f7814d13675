import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fs from 'node:fs';

/** One alert in an Alertmanager webhook payload (version 4). */
export interface WebhookAlert {
  status: 'firing' | 'resolved';
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt: string;
}

export interface Page {
  /** Receiver path, e.g. /pager or /chat. */
  path: string;
  receivedAt: number;
  receiver: string;
  status: string;
  alerts: WebhookAlert[];
}

/**
 * A local webhook receiver standing in for a pager/chat service: it records
 * (and optionally logs to a file) every notification Alertmanager delivers.
 */
export async function startWebhookReceiver(logFile?: string): Promise<{
  url: string;
  pages: Page[];
  firing(alertname: string, path?: string): Page[];
  close(): Promise<void>;
}> {
  const pages: Page[] = [];
  const srv = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      try {
        const p = JSON.parse(body) as { receiver: string; status: string; alerts: WebhookAlert[] };
        const page: Page = { path: req.url ?? '/', receivedAt: Date.now(), receiver: p.receiver, status: p.status, alerts: p.alerts };
        pages.push(page);
        if (logFile) {
          for (const a of p.alerts) {
            fs.appendFileSync(logFile, `${new Date().toISOString()} ${page.path} ${a.status.toUpperCase()} ${a.labels.alertname} ${JSON.stringify(a.labels)} ${a.annotations.summary ?? ''}\n`);
          }
        }
      } catch {
        /* not a webhook payload: ignore */
      }
      res.writeHead(200);
      res.end('ok');
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    pages,
    firing(alertname: string, path?: string) {
      return pages.filter((p) => (path === undefined || p.path === path) && p.alerts.some((a) => a.status === 'firing' && a.labels.alertname === alertname));
    },
    close: () => new Promise<void>((r) => { srv.closeAllConnections(); srv.close(() => r()); }),
  };
}

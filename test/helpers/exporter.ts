import fs from 'node:fs';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import path from 'node:path';
import { Writable } from 'node:stream';
import { Exporter, type ExporterOptions } from '../../src/exporter/exporter';
import { parseFlags } from '../../src/cli/flags';
import { MetricsRenderer } from '../../src/metrics/renderer';
import { createApp } from '../../src/server/app';
import { listen } from '../../src/server/listen';
import { SnapshotStore } from '../../src/snapshot/store';
import type { Snapshot } from '../../src/snapshot/types';
import type { ExpositionFormat } from '../../src/metrics/text';
import type { Logger } from '../../src/util/log';
import { tmpDir } from './tmp';
import { artifactsDir } from '../harness/proc';
import { putSnapshot } from './hypha-snapshot';

/** A logger that keeps every line in memory, so tests can grep logs for secrets. */
export function memoryLogger(level = 'debug'): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString());
      cb();
    },
  });
  return { log: pino({ level }, stream), lines };
}

export interface InProcessOptions {
  env?: NodeJS.ProcessEnv;
  /** --storage.path (undefined: memory only). */
  storagePath?: string;
  storageReadOnly?: boolean;
  /** Level of the in-memory log (default debug). */
  logLevel?: string;
  filter?: ExporterOptions['filter'];
  /** Written to test-artifacts/<name>-exporter-<time>.log by close(), for reading after a failed run. */
  logArtifact?: string;
}

export interface ServedExporter {
  /** http://127.0.0.1:port */
  url: string;
  port: number;
  server: http.Server;
}

export interface InProcessExporter {
  exporter: Exporter;
  /** Every log line so far (JSON, one per entry). */
  lines: string[];
  log: Logger;
  /** The config file the exporter reads. */
  file: string;
  /** Writes a new config text to `file` (then call exporter.reload()). */
  rewrite(next: string): void;
  /** The /metrics body, through the call the HTTP handler makes. */
  scrape(format?: ExpositionFormat): Promise<string>;
  /**
   * Serves the exporter's endpoints over HTTP as src/main.ts does without a web config (createApp on the
   * listener of src/server/listen.ts, default header timeout and connection cap) on 127.0.0.1, a free port
   * unless given. Once per exporter; close() closes it.
   */
  serve(port?: number): Promise<ServedExporter>;
  /** Closes the HTTP server if serve() opened one, stops the exporter, writes the log artifact if asked, removes the temp dir of a config given as text. */
  close(): Promise<void>;
}

/**
 * The one way tests build an Exporter in-process: exactly as src/main.ts does (`new Exporter` with the config
 * file, a logger, the environment and the storage flags), over a config text written to a temp file or an
 * existing `{ file }`. Not started: tests that subscribe to the store first call exporter.start() themselves.
 */
export function exporterWithConfig(config: string | { file: string }, o: InProcessOptions = {}): InProcessExporter {
  const t = typeof config === 'string' ? tmpDir() : undefined;
  const file = typeof config === 'string' ? (t as ReturnType<typeof tmpDir>).write('config.yml', config) : config.file;
  const { log, lines } = memoryLogger(o.logLevel);
  const exporter = new Exporter({
    configFile: file, log, env: o.env ?? {}, storagePath: o.storagePath, storageReadOnly: o.storageReadOnly, filter: o.filter,
  });
  let served: ServedExporter | undefined;
  return {
    exporter,
    lines,
    log,
    file,
    rewrite(next: string) {
      fs.writeFileSync(file, next);
    },
    scrape: (format: ExpositionFormat = 'prometheus') => scrapeText(exporter.metrics, format),
    async serve(port = 0) {
      if (served) throw new Error('serve() called twice');
      const d = parseFlags([]);
      const { server } = await listen(createApp(exporter, log), log, {
        host: '127.0.0.1', port, headerTimeoutMs: d.webHeaderTimeoutMs, maxConnections: d.webMaxConnections,
      });
      const bound = (server.address() as AddressInfo).port;
      served = { url: `http://127.0.0.1:${bound}`, port: bound, server };
      return served;
    },
    async close() {
      const s = served?.server;
      if (s) await new Promise<void>((r) => s.close(() => r()));
      await exporter.stop();
      if (o.logArtifact !== undefined) fs.writeFileSync(path.join(artifactsDir(), `${o.logArtifact}-exporter-${Date.now()}.log`), lines.join(''));
      t?.cleanup();
    },
  };
}

/** The /metrics body through the call the HTTP handler makes (MetricsRenderer.scrape), uncompressed. */
export async function scrapeText(m: MetricsRenderer, format: ExpositionFormat = 'prometheus'): Promise<string> {
  const body = await m.scrape(format, 'identity');
  return body.chunks.map((c) => (typeof c === 'string' ? c : c.toString('utf8'))).join('');
}

/** The exposition of one snapshot, rendered by the exporter's renderer. */
export async function renderSnapshot(s: Snapshot): Promise<string> {
  const store = new SnapshotStore();
  putSnapshot(store, s);
  return scrapeText(new MetricsRenderer(store));
}

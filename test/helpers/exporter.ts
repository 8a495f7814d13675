import pino from 'pino';
import { Writable } from 'node:stream';
import { Exporter } from '../../src/exporter/exporter';
import { MetricsRenderer } from '../../src/metrics/renderer';
import { SnapshotStore } from '../../src/snapshot/store';
import type { Snapshot } from '../../src/snapshot/types';
import type { ExpositionFormat } from '../../src/metrics/text';
import type { Logger } from '../../src/util/log';
import { tmpDir } from './tmp';
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

/** An Exporter over a config text written to a temp file; config.rewrite() changes it for reloads. */
export function exporterWithConfig(text: string, env: NodeJS.ProcessEnv = {}) {
  const t = tmpDir();
  const file = t.write('config.yml', text);
  const { log, lines } = memoryLogger();
  const exporter = new Exporter({ configFile: file, log, env });
  return {
    exporter,
    lines,
    file,
    rewrite(next: string) {
      t.write('config.yml', next);
    },
    async close() {
      await exporter.stop();
      t.cleanup();
    },
  };
}

/** The /metrics body through the call the HTTP handler makes (MetricsRenderer.scrape), uncompressed. */
export async function scrapeText(m: MetricsRenderer, format: ExpositionFormat = 'prometheus'): Promise<string> {
  const body = await m.scrape(format, 'identity');
  return Buffer.concat(body.chunks).toString('utf8');
}

/** The exposition of one snapshot, rendered by the exporter's renderer. */
export async function renderSnapshot(s: Snapshot): Promise<string> {
  const store = new SnapshotStore();
  putSnapshot(store, s);
  return scrapeText(new MetricsRenderer(store));
}

/** Value of one series in exposition text, or undefined. */
export function seriesValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got: Record<string, string> = {};
    for (const lm of (m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) got[lm[1]] = lm[2];
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[4]);
  }
  return undefined;
}

export function seriesCount(text: string, name: string, labels: Record<string, string> = {}): number {
  let n = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || !line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got: Record<string, string> = {};
    for (const lm of (m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) got[lm[1]] = lm[2];
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) n++;
  }
  return n;
}

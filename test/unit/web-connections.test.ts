// Connection hygiene of the real bin: half-open connections (plain HTTP and TLS) are closed within
// --web.header-timeout, the cap keeps memory bounded, and a scrape during the attack stays near its baseline.
import fs from 'node:fs';
import { ensureBuilt } from '../helpers/cli';
import { TestCa } from '../helpers/certs';
import { tmpDir } from '../helpers/tmp';
import { get, halfOpen, median, rssMb } from '../helpers/web-attack';
import { spawnExporter } from '../harness/exporter-process';

jest.setTimeout(120_000);

const TIMEOUT_MS = 3000;
/** The guard's timer fires at the timeout; the close reaches the client a moment later on a loaded machine. */
const SLACK_MS = 1500;

describe('half-open connections', () => {
  const t = tmpDir();
  beforeAll(() => ensureBuilt());
  afterAll(() => t.cleanup());

  it('5,000 half-open HTTP connections are closed within the header timeout; a scrape meanwhile stays near its baseline (not queued behind them)', async () => {
    const ex = await spawnExporter({ name: 'web-connections-http', config: 'ray_clusters: []\n', logLevel: 'info', args: [`--web.header-timeout=${TIMEOUT_MS}ms`] });
    try {
      const url = `${ex.url}/metrics`;
      const base: number[] = [];
      for (let i = 0; i < 20; i++) base.push((await get(url)).ms);
      const rssBefore = rssMb(ex.proc.child.pid as number);
      const { result, during } = await halfOpen('127.0.0.1', ex.port, 'plain', 5000, TIMEOUT_MS + 10_000, async () => {
        const xs: number[] = [];
        for (let i = 0; i < 20; i++) xs.push((await get(url)).ms);
        return { scrape: median(xs), rss: rssMb(ex.proc.child.pid as number) };
      });
      const baseline = median(base);
      process.stdout.write(`plain: ${JSON.stringify(result)} scrape ${baseline.toFixed(1)} → ${during.scrape.toFixed(1)} ms, RSS ${rssBefore.toFixed(0)} → ${during.rss.toFixed(0)} MB\n`);
      expect(result.leftOpen).toBe(0);
      expect(result.closedByMs).toBeLessThanOrEqual(TIMEOUT_MS + SLACK_MS);
      // The attack runs in this process, on the same cores as the exporter (and, in the test command, next to
      // another jest worker): 4.8 -> 10.3 ms was seen with two workers. A scrape queued behind the connections
      // (the cap holding it, a blocked event loop) takes hundreds of ms or the header timeout; the figures are in
      // BENCHMARKS.md (web-security).
      expect(during.scrape).toBeLessThanOrEqual(Math.max(3 * baseline, baseline + 25));
      // The cap (1,024 by default) bounds what the connections cost.
      expect(during.rss - rssBefore).toBeLessThan(60);
    } finally {
      await ex.stop();
    }
  });

  it('300 half-open TLS connections (after the handshake, and inside it) are closed within the header timeout', async () => {
    const ca = new TestCa(t.dir);
    const srv = ca.issue('srv', ['IP:127.0.0.1']);
    const web = t.write('web.yml', `tls_server_config:\n  cert_file: ${srv.crt}\n  key_file: ${srv.key}\n`);
    const ex = await spawnExporter({
      name: 'web-connections-tls', config: 'ray_clusters: []\n', logLevel: 'info', waitReady: false,
      args: [`--web.header-timeout=${TIMEOUT_MS}ms`, `--web.config.file=${web}`],
    });
    try {
      await new Promise((r) => setTimeout(r, 1500));
      for (const kind of ['tls', 'tls-hello'] as const) {
        const { result } = await halfOpen('127.0.0.1', ex.port, kind, 300, TIMEOUT_MS + 10_000, async () => undefined);
        process.stdout.write(`${kind}: ${JSON.stringify(result)}\n`);
        expect(result.leftOpen).toBe(0);
        expect(result.closedByMs).toBeLessThanOrEqual(TIMEOUT_MS + SLACK_MS);
      }
      expect(fs.existsSync(web)).toBe(true);
    } finally {
      await ex.stop();
    }
  });
});

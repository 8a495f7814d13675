// A child process (started by web-attack.ts halfOpen, with its open-file limit raised) that opens N
// connections which stop half way, reports when they are all open, then when the server has closed
// them: one JSON line each on stdout.
//   node half-open-client.js HOST PORT plain|tls|tls-hello COUNT GIVE_UP_MS
import net from 'node:net';
import tls from 'node:tls';

const [host, portText, kind, countText, giveUpText] = process.argv.slice(2);
const port = Number(portText);
const count = Number(countText);
const giveUpMs = Number(giveUpText);
/** Half of a request header: the line and one header, no blank line. */
const HALF_HEADER = `GET /metrics HTTP/1.1\r\nHost: ${host}:${port}\r\n`;
/** A TLS record header announcing a 512-byte handshake message, and a few bytes of it. */
const HALF_HELLO = Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]);

let closed = 0;
let longestMs = 0;

function open(): Promise<void> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    let done = false;
    const settle = () => {
      if (!done) {
        done = true;
        resolve();
      }
    };
    const onClose = () => {
      closed++;
      longestMs = Math.max(longestMs, performance.now() - t0);
      settle();
    };
    let s: net.Socket;
    if (kind === 'tls') {
      s = tls.connect({ host, port, rejectUnauthorized: false }, () => {
        s.write(HALF_HEADER);
        settle();
      });
    } else {
      s = net.connect({ host, port }, () => {
        s.write(kind === 'plain' ? HALF_HEADER : HALF_HELLO);
        settle();
      });
    }
    s.on('data', () => undefined); // a 408 answer, read and dropped
    s.on('error', () => undefined); // a reset is a close too
    s.once('close', onClose);
  });
}

async function main(): Promise<void> {
  // In batches, so the listen backlog does not overflow (a dropped SYN would retry after a second).
  for (let i = 0; i < count; i += 100) {
    await Promise.all(Array.from({ length: Math.min(100, count - i) }, open));
  }
  process.stdout.write(`${JSON.stringify({ opened: count })}\n`);
  const t0 = performance.now();
  while (closed < count && performance.now() - t0 < giveUpMs) await new Promise((r) => setTimeout(r, 50));
  process.stdout.write(`${JSON.stringify({ opened: count, closed, closedByMs: Math.round(longestMs), leftOpen: count - closed })}\n`);
  process.exit(0);
}

void main();

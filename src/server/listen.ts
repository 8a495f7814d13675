import http from 'node:http';
import https from 'node:https';
import { isIPv6 } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Logger } from '../util/log';
import { ConnectionGuard, ConnectionLimits } from './connections';
import type { ClientAuthType, TlsSettings } from './web-config';
import type { WebConfigReloader } from './web-config-reloader';

/** Node's default; an idle keep-alive connection (Prometheus's, between scrapes) is closed after it. */
const KEEP_ALIVE_TIMEOUT_MS = 5000;

export interface ListenOptions extends ConnectionLimits {
  host?: string;
  port: number;
  /** The web config, read again when it changes (TLS, client certificates); undefined: plain HTTP. */
  web?: WebConfigReloader;
}

/** requestCert / rejectUnauthorized of a client_auth_type; the rest of each type is checked after the handshake (refusal()). */
function clientCertOptions(a: ClientAuthType): { requestCert: boolean; rejectUnauthorized: boolean } {
  return { requestCert: a !== 'NoClientCert', rejectUnauthorized: a === 'RequireAndVerifyClientCert' };
}

/** IPv6 in one spelling (OpenSSL prints SANs uncompressed, the toolkit and operators write them compressed). */
function canonicalIp(v: string): string {
  return isIPv6(v) ? new URL(`http://[${v}]`).hostname.slice(1, -1) : v;
}

/**
 * The SAN values of a certificate (X509Certificate.subjectAltName: `DNS:a, IP Address:1.2.3.4, email:x,
 * URI:y`, a value with special characters JSON-quoted), as the toolkit collects DNS names, e-mail
 * addresses, IP addresses and URIs. Other kinds are left out.
 */
export function sanValues(subjectAltName: string | undefined): string[] {
  const out: string[] = [];
  const re = /(DNS|IP Address|email|URI|[^:,]+):("(?:[^"\\]|\\.)*"|[^,]*)(?:, |$)/gy;
  let m: RegExpExecArray | null;
  while (subjectAltName && (m = re.exec(subjectAltName)) !== null && m[0] !== '') {
    let v = m[2];
    if (v.startsWith('"')) {
      try {
        v = JSON.parse(v) as string;
      } catch {
        continue;
      }
    }
    if (m[1] === 'IP Address') out.push(canonicalIp(v));
    else if (m[1] === 'DNS' || m[1] === 'email' || m[1] === 'URI') out.push(v);
  }
  return out;
}

/** Why a TLS client may not go on under these settings (after its handshake), or undefined. */
export function refusal(t: TlsSettings, s: Pick<TLSSocket, 'authorized' | 'authorizationError' | 'getPeerX509Certificate'>): string | undefined {
  const cert = s.getPeerX509Certificate();
  switch (t.clientAuth) {
    case 'RequireAnyClientCert':
      if (!cert) return 'no client certificate (client_auth_type RequireAnyClientCert)';
      break;
    case 'VerifyClientCertIfGiven':
      if (cert && !s.authorized) return `client certificate not verified: ${String(s.authorizationError)}`;
      break;
    case 'RequireAndVerifyClientCert':
      if (!cert) return 'no client certificate (client_auth_type RequireAndVerifyClientCert)';
      if (!s.authorized) return `client certificate not verified: ${String(s.authorizationError)}`;
      break;
    default:
      break;
  }
  if (t.allowedSans) {
    if (!cert) return 'no client certificate (client_allowed_sans is set)';
    const allowed = new Set(t.allowedSans.map(canonicalIp));
    if (!sanValues(cert.subjectAltName).some((v) => allowed.has(v))) return 'client certificate has none of client_allowed_sans';
  }
  return undefined;
}

/**
 * The listener: HTTP, or HTTPS whose certificate, key, client CA and client policy follow the web
 * config as it is reloaded (new connections get the new ones); header timeout, keep-alive timeout and
 * the connection cap (connections.ts) either way.
 */
export function listen(app: http.RequestListener, log: Logger, o: ListenOptions): Promise<{ server: http.Server; guard: ConnectionGuard }> {
  const timeouts: http.ServerOptions = {
    headersTimeout: o.headerTimeoutMs,
    // A GET has no body: the whole request is its header. Twice the header timeout leaves room for a POST's empty body.
    requestTimeout: 2 * o.headerTimeoutMs,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    // How often Node looks for late headers (its default, 30 s, would let them live up to 40 s).
    connectionsCheckingInterval: Math.max(50, Math.min(1000, o.headerTimeoutMs / 4)),
  };
  const tls = o.web?.current.tls;
  let server: http.Server;
  if (tls) {
    const s = https.createServer({ ...timeouts, ...tls.context, ...clientCertOptions(tls.clientAuth), handshakeTimeout: o.headerTimeoutMs }, app);
    const web = o.web as WebConfigReloader;
    web.onChange((c) => {
      if (!c.tls) return; // the reloader refuses turning TLS off
      s.setSecureContext(c.tls.context);
      // Read by Node for each new connection (tls.Server's tlsConnectionListener); refusal() checks the rest.
      Object.assign(s, clientCertOptions(c.tls.clientAuth));
    });
    s.on('secureConnection', (socket: TLSSocket) => {
      const now = web.current.tls;
      const why = now ? refusal(now, socket) : undefined;
      if (why) {
        log.debug({ remote: socket.remoteAddress, reason: why }, 'TLS client refused');
        socket.destroy();
      }
    });
    s.on('tlsClientError', (e, socket) => {
      log.debug({ remote: socket.remoteAddress, error: e.message }, 'TLS handshake failed');
    });
    server = s;
  } else {
    server = http.createServer(timeouts, app);
  }
  const guard = new ConnectionGuard(server, o);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host ?? '::', () => {
      server.off('error', reject);
      resolve({ server, guard });
    });
  });
}

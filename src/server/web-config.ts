import crypto from 'node:crypto';
import fs from 'node:fs';
import type { SecureContextOptions } from 'node:tls';
import bcrypt from 'bcryptjs';
import { z } from 'zod';
import type { NextFunction, Request, Response } from 'express';
import { parseYamlConfig, ConfigError } from '../config/load';

// --web.config.file in the Prometheus exporter-toolkit format: TLS and basic
// auth for every endpoint. Unsupported toolkit keys are refused rather than
// ignored, so a config written for the Go toolkit cannot silently weaken.

const TLS_VERSIONS = { TLS10: 'TLSv1', TLS11: 'TLSv1.1', TLS12: 'TLSv1.2', TLS13: 'TLSv1.3' } as const;
const CLIENT_AUTH = ['NoClientCert', 'RequestClientCert', 'RequireAnyClientCert', 'VerifyClientCertIfGiven', 'RequireAndVerifyClientCert'] as const;

const webConfigSchema = z.strictObject({
  tls_server_config: z
    .strictObject({
      cert_file: z.string().min(1),
      key_file: z.string().min(1),
      client_auth_type: z.enum(CLIENT_AUTH).default('NoClientCert'),
      client_ca_file: z.string().min(1).optional(),
      min_version: z.enum(['TLS10', 'TLS11', 'TLS12', 'TLS13']).default('TLS12'),
      max_version: z.enum(['TLS10', 'TLS11', 'TLS12', 'TLS13']).default('TLS13'),
    })
    .optional(),
  basic_auth_users: z
    .record(z.string().min(1), z.string().regex(/^\$2[aby]\$\d\d\$.{53}$/, 'must be a bcrypt hash ($2y$...)'))
    .optional(),
});

export interface WebConfig {
  /** Options for https.createServer, when TLS is configured. */
  tls?: SecureContextOptions & { requestCert: boolean; rejectUnauthorized: boolean };
  users?: Map<string, string>;
}

function readFile(file: string, field: string, path: string): Buffer {
  try {
    return fs.readFileSync(path);
  } catch (e) {
    throw new ConfigError(file, field, `cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

export function loadWebConfig(file: string): WebConfig {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(file, '', `cannot read web config file: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  const { value } = parseYamlConfig(file, text, webConfigSchema);
  const out: WebConfig = {};
  const t = value.tls_server_config;
  if (t) {
    const needCa = t.client_auth_type === 'VerifyClientCertIfGiven' || t.client_auth_type === 'RequireAndVerifyClientCert';
    if (needCa && !t.client_ca_file) throw new ConfigError(file, 'tls_server_config.client_ca_file', `is required with client_auth_type ${t.client_auth_type}`);
    out.tls = {
      cert: readFile(file, 'tls_server_config.cert_file', t.cert_file),
      key: readFile(file, 'tls_server_config.key_file', t.key_file),
      ca: t.client_ca_file ? readFile(file, 'tls_server_config.client_ca_file', t.client_ca_file) : undefined,
      minVersion: TLS_VERSIONS[t.min_version],
      maxVersion: TLS_VERSIONS[t.max_version],
      requestCert: t.client_auth_type !== 'NoClientCert',
      rejectUnauthorized: t.client_auth_type === 'RequireAndVerifyClientCert',
    };
    try {
      crypto.createPrivateKey(out.tls.key as Buffer);
      new crypto.X509Certificate(out.tls.cert as Buffer);
    } catch (e) {
      throw new ConfigError(file, 'tls_server_config', `certificate or key is not valid PEM: ${(e as Error).message}`);
    }
  }
  if (value.basic_auth_users) out.users = new Map(Object.entries(value.basic_auth_users));
  return out;
}

/**
 * Basic auth over bcrypt hashes. A bcrypt check costs ~100 ms by design, so a
 * successful (user, password) pair is remembered by its SHA-256 only: a
 * Prometheus scraping every 15 s does not pay it on every scrape.
 */
export function basicAuth(users: Map<string, string>) {
  const verified = new Set<string>();
  return (req: Request, res: Response, next: NextFunction): void => {
    const header = req.headers.authorization ?? '';
    const m = /^Basic ([A-Za-z0-9+/=]+)$/.exec(header);
    const deny = () => {
      res.status(401).set('WWW-Authenticate', 'Basic realm="hypha-serve-exporter"').type('text/plain').send('Unauthorized.\n');
    };
    if (!m) return deny();
    const decoded = Buffer.from(m[1], 'base64').toString('utf8');
    const i = decoded.indexOf(':');
    if (i < 0) return deny();
    const user = decoded.slice(0, i);
    const pass = decoded.slice(i + 1);
    const hash = users.get(user);
    if (hash === undefined) return deny();
    const key = crypto.createHash('sha256').update(`${user}\0${pass}\0${hash}`).digest('hex');
    if (verified.has(key)) return next();
    bcrypt.compare(pass, hash).then(
      (ok) => {
        if (!ok) return deny();
        if (verified.size > 1000) verified.clear();
        verified.add(key);
        next();
      },
      () => deny(),
    );
  };
}

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Certificates made with openssl (installed by scripts/setup.sh), as an issuer such as cert-manager
 * gives them: a CA, and certificates it signs with the SANs asked for (server or client).
 */
export class TestCa {
  readonly crt: string;
  readonly key: string;
  #serial = 1;
  constructor(readonly dir: string, name = 'test-ca') {
    this.crt = path.join(dir, `${name}.crt`);
    this.key = path.join(dir, `${name}.key`);
    this.#sh(`openssl req -x509 -newkey rsa:2048 -nodes -keyout ${this.key} -out ${this.crt} -days 2 -subj "/CN=${name}"`);
  }

  /** A key and certificate signed by this CA: `name.crt`, `name.key` in the dir; sans as openssl writes them (IP:127.0.0.1, DNS:x, URI:y, email:z). */
  issue(name: string, sans: string[], usage: 'server' | 'client' = 'server'): { crt: string; key: string; pem: { crt: string; key: string } } {
    const crt = path.join(this.dir, `${name}.crt`);
    const key = path.join(this.dir, `${name}.key`);
    const csr = path.join(this.dir, `${name}.csr`);
    const ext = path.join(this.dir, `${name}.ext`);
    fs.writeFileSync(ext, `subjectAltName=${sans.join(',')}\nextendedKeyUsage=${usage === 'server' ? 'serverAuth' : 'clientAuth'}\n`);
    this.#sh(`openssl req -newkey rsa:2048 -nodes -keyout ${key} -out ${csr} -subj "/CN=${name}"`);
    this.#sh(`openssl x509 -req -in ${csr} -CA ${this.crt} -CAkey ${this.key} -set_serial ${this.#serial++} -out ${crt} -days 2 -extfile ${ext}`);
    return { crt, key, pem: { crt: fs.readFileSync(crt, 'utf8'), key: fs.readFileSync(key, 'utf8') } };
  }

  #sh(cmd: string): void {
    execFileSync('sh', ['-c', `${cmd} 2>/dev/null`], { cwd: this.dir, stdio: 'pipe' });
  }
}

/**
 * A Kubernetes secret volume of several files (tls.crt, tls.key, ca.crt): each name -> ..data/name,
 * ..data -> ..<generation>/. `swap` replaces them all at once as kubelet's atomic writer does (a new
 * directory, a new symlink renamed over ..data, the old directory removed), which is how a certificate
 * cert-manager renewed reaches a pod.
 */
export function secretVolumeFiles(dir: string, files: Record<string, string>): { swap(next: Record<string, string>): void } {
  let gen = 0;
  const write = (contents: Record<string, string>): string => {
    const d = `..2026_12_02_${gen++}`;
    fs.mkdirSync(path.join(dir, d));
    for (const [name, text] of Object.entries(contents)) fs.writeFileSync(path.join(dir, d, name), text, { mode: 0o600 });
    return d;
  };
  let current = write(files);
  fs.symlinkSync(current, path.join(dir, '..data'));
  for (const name of Object.keys(files)) fs.symlinkSync(path.join('..data', name), path.join(dir, name));
  return {
    swap(next) {
      const d = write(next);
      fs.symlinkSync(d, path.join(dir, '..data_tmp'));
      fs.renameSync(path.join(dir, '..data_tmp'), path.join(dir, '..data'));
      fs.rmSync(path.join(dir, current), { recursive: true });
      current = d;
    },
  };
}

import fs from 'node:fs';
import type { CredentialStatus } from '../snapshot/health';
import { Secret } from '../util/secret';

/** Identity and version of the file behind the path (symlinks followed, as Kubernetes swaps `..data`). */
function stampOf(st: fs.Stats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
}

function why(e: unknown): string {
  return (e as NodeJS.ErrnoException).code ?? (e as Error).message;
}

/**
 * A token read from a file and read again whenever the file changes, like
 * Prometheus' `credentials_file`: every reveal() checks the file's stamp
 * (device, inode, size, mtime, ctime — one stat, no read) and reads it when
 * the stamp moved; refresh({force: true}) reads it regardless (after the
 * upstream refused the token). A Kubernetes Secret volume replaces the file
 * by an atomic symlink swap, so a read sees the old or the new token; a file
 * that is missing or empty for a moment keeps the last good token, and the
 * spell is counted (status()) instead of blanking the credential.
 */
export class FileSecret extends Secret {
  #stamp: string;
  #lastReadSeconds: number;
  #readErrorsTotal = 0;
  #changesTotal = 0;
  #problem: string | undefined;

  /** Reads the file once; throws an Error whose message says why (config validation reports it). */
  static open(file: string): FileSecret {
    let st: fs.Stats;
    let text: string;
    try {
      st = fs.statSync(file);
      text = fs.readFileSync(file, 'utf8').trim();
    } catch (e) {
      throw new Error(why(e));
    }
    if (text === '') throw new Error('file is empty');
    return new FileSecret(file, text, stampOf(st));
  }

  private constructor(readonly file: string, value: string, stamp: string) {
    super(value);
    this.#stamp = stamp;
    this.#lastReadSeconds = Date.now() / 1000;
  }

  override reveal(): string {
    this.refresh();
    return super.reveal();
  }

  override refresh({ force = false }: { force?: boolean } = {}): void {
    let st: fs.Stats;
    try {
      st = fs.statSync(this.file);
    } catch (e) {
      this.#failed(why(e));
      return;
    }
    const stamp = stampOf(st);
    if (!force && stamp === this.#stamp && this.#problem === undefined) return;
    let text: string;
    try {
      text = fs.readFileSync(this.file, 'utf8').trim();
    } catch (e) {
      this.#failed(why(e));
      return;
    }
    // An empty file is a write in progress or a broken Secret, never "no token": keep the last good one.
    if (text === '') {
      this.#failed('file is empty');
      return;
    }
    this.#stamp = stamp;
    this.#problem = undefined;
    this.#lastReadSeconds = Date.now() / 1000;
    if (this.replace(text)) this.#changesTotal++;
  }

  status(): CredentialStatus {
    return {
      file: this.file,
      lastReadSeconds: this.#lastReadSeconds,
      readErrorsTotal: this.#readErrorsTotal,
      changesTotal: this.#changesTotal,
      ...(this.#problem !== undefined ? { problem: this.#problem } : {}),
    };
  }

  #failed(problem: string): void {
    // One count per spell (and per change of problem), not one per use while it lasts.
    if (this.#problem !== problem) this.#readErrorsTotal++;
    this.#problem = problem;
  }
}

/** The file status of a credential, when it comes from a file. */
export function credentialStatus(s: Secret | undefined): CredentialStatus | undefined {
  return s instanceof FileSecret ? s.status() : undefined;
}

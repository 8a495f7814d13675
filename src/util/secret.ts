import { inspect } from 'node:util';

/** Earlier values kept for scrubbing: a message about an old token must not leak it either. */
const EARLIER_KEPT = 4;

/**
 * A credential that renders as "<secret>" wherever it is stringified, logged
 * or serialised, so a token cannot leak through a log line or a JSON dump.
 * Only reveal() gives the value, at the single place it goes on the wire.
 * A secret read from a file can change its value (see FileSecret); callers
 * therefore reveal() at every use instead of keeping the string.
 */
export class Secret {
  #value: string;
  #earlier: string[] = [];
  constructor(value: string) {
    this.#value = value;
  }
  reveal(): string {
    return this.#value;
  }
  /** The current and the last few earlier values, for scrubbing texts. */
  values(): readonly string[] {
    return [this.#value, ...this.#earlier];
  }
  /**
   * Re-reads the value where it can change (a file); `force` reads even when
   * nothing seems to have changed (after the upstream refused it). A value from
   * the environment cannot change: nothing to do.
   */
  refresh(_opts: { force?: boolean } = {}): void {}
  /** For subclasses whose value changes: the old value stays known for scrubbing. */
  protected replace(value: string): boolean {
    if (value === this.#value) return false;
    this.#earlier = [this.#value, ...this.#earlier].slice(0, EARLIER_KEPT);
    this.#value = value;
    return true;
  }
  toString(): string {
    return '<secret>';
  }
  toJSON(): string {
    return '<secret>';
  }
  [inspect.custom](): string {
    return '<secret>';
  }
}

/** Removes every occurrence of the given secrets (and their earlier values) from a text (error messages from upstreams). */
export function scrub(text: string, secrets: readonly (Secret | undefined)[]): string {
  let out = text;
  for (const s of secrets) {
    for (const v of s?.values() ?? []) {
      if (v.length >= 4) out = out.split(v).join('<secret>');
    }
  }
  return out;
}

import { inspect } from 'node:util';

/**
 * A credential that renders as "<secret>" wherever it is stringified, logged
 * or serialised, so a token cannot leak through a log line or a JSON dump.
 * Only reveal() gives the value, at the single place it goes on the wire.
 */
export class Secret {
  readonly #value: string;
  constructor(value: string) {
    this.#value = value;
  }
  reveal(): string {
    return this.#value;
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

/** Removes every occurrence of the given secrets from a text (error messages from upstreams). */
export function scrub(text: string, secrets: readonly (Secret | undefined)[]): string {
  let out = text;
  for (const s of secrets) {
    const v = s?.reveal();
    if (v && v.length >= 4) out = out.split(v).join('<secret>');
  }
  return out;
}

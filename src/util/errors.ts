/** A message for any thrown value, without stack. */
export function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message;
  if (typeof e === 'string') return e;
  try {
    return JSON.stringify(e);
  } catch {
    return String(e);
  }
}

/** Error with a closed-set reason, so failures can be counted by label. */
export class ReasonedError<R extends string> extends Error {
  constructor(readonly reason: R, message: string) {
    super(message);
  }
}

/** Rejects after ms with a ReasonedError('timeout'); the timer never keeps the process alive. */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ReasonedError('timeout', `${what} timed out after ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

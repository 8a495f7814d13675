// Version order as PEP 440 defines it, for the versions BioEngine reports (`bioengine_version`):
// a release (1.2.3), optionally a pre-release (a, b, rc), a post-release and a dev release, with the
// separators and spellings PEP 440 normalises ("0.16.6-dev3" is 0.16.6.dev3, "1.0RC1" is 1.0rc1).
// Local versions (+abc) compare as their public part. What does not parse is not a version.

export interface Pep440Version {
  epoch: number;
  release: number[];
  /** [phase 0 = a, 1 = b, 2 = rc, number] */
  pre?: [number, number];
  post?: number;
  dev?: number;
}

const PATTERN = new RegExp(
  '^v?(?:(\\d+)!)?(\\d+(?:\\.\\d+)*)'
  + '(?:[-_.]?(a|b|c|rc|alpha|beta|pre|preview)[-_.]?(\\d+)?)?'
  + '(?:-(\\d+)|[-_.]?(post|rev|r)[-_.]?(\\d+)?)?'
  + '(?:[-_.]?(dev)[-_.]?(\\d+)?)?'
  + '(?:\\+[a-z0-9]+(?:[-_.][a-z0-9]+)*)?$',
  'i',
);

const PRE_PHASE: Record<string, number> = { a: 0, alpha: 0, b: 1, beta: 1, c: 2, rc: 2, pre: 2, preview: 2 };

export function parsePep440(text: string): Pep440Version | undefined {
  const m = PATTERN.exec(text.trim());
  if (!m) return undefined;
  const [, epoch, release, prePhase, preN, postImplicit, postWord, postN, dev, devN] = m;
  const v: Pep440Version = { epoch: epoch ? Number(epoch) : 0, release: release.split('.').map(Number) };
  if (prePhase) v.pre = [PRE_PHASE[prePhase.toLowerCase()], Number(preN ?? 0)];
  if (postImplicit !== undefined) v.post = Number(postImplicit);
  else if (postWord) v.post = Number(postN ?? 0);
  if (dev) v.dev = Number(devN ?? 0);
  return v;
}

/**
 * The sort key of PEP 440's ordering: a dev release comes before its pre-releases and its release
 * (1.0.dev1 < 1.0a1 < 1.0 < 1.0.post1), a pre-release before its release, a post-release after it.
 */
function key(v: Pep440Version): number[] {
  const pre = v.pre ? v.pre : v.post === undefined && v.dev !== undefined ? [-1, 0] : [3, 0];
  const post = v.post === undefined ? -1 : v.post;
  const dev = v.dev === undefined ? Number.POSITIVE_INFINITY : v.dev;
  return [...pre, post, dev];
}

function compareRelease(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** Negative, 0 or positive as a sorts before, with or after b. */
export function comparePep440(a: Pep440Version, b: Pep440Version): number {
  if (a.epoch !== b.epoch) return a.epoch - b.epoch;
  const r = compareRelease(a.release, b.release);
  if (r !== 0) return r;
  const ka = key(a);
  const kb = key(b);
  for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return ka[i] < kb[i] ? -1 : 1;
  return 0;
}

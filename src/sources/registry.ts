import type { Config } from '../config/load';
import type { Logger } from '../log';
import type { SnapshotStore } from '../snapshot/store';
import type { Source } from './poller';
import { RayServeSource } from './ray-serve/source';
import { Secret } from '../util/secret';

/** A source the current config asks for; the fingerprint decides whether a reload restarts it. */
export interface DesiredSource {
  key: string;
  fingerprint: string;
  create(): Source;
}

export type SourcePlanner = (cfg: Config, store: SnapshotStore, log: Logger) => DesiredSource[];

/** Stable text of a config fragment. A Secret's toJSON() hides its value, so the replacer looks at
 * the raw property to tell a changed token (which must restart the source) from an unchanged one. */
export function fingerprint(v: unknown): string {
  return JSON.stringify(v, function (this: Record<string, unknown>, k: string, val: unknown) {
    const raw = this[k];
    return raw instanceof Secret ? `secret:${hash(raw.reveal())}` : val;
  });
}

function hash(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(31, h) + s.charCodeAt(i)) | 0;
  return h;
}

export const planRaySources: SourcePlanner = (cfg, store, log) =>
  cfg.rayClusters.map((c) => ({
    key: `ray/${c.name}`,
    fingerprint: fingerprint(c),
    create: () => new RayServeSource(c, store, log.child({ source: 'ray', target: c.name })),
  }));

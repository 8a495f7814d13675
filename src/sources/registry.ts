import type { Config } from '../config/load';
import type { Logger } from '../log';
import type { SnapshotStore } from '../snapshot/store';
import type { Source } from './poller';
import { RayServeSource } from './ray-serve/source';

/** A source the current config asks for; the fingerprint decides whether a reload restarts it. */
export interface DesiredSource {
  key: string;
  fingerprint: string;
  create(): Source;
}

export type SourcePlanner = (cfg: Config, store: SnapshotStore, log: Logger) => DesiredSource[];

/** Stable text of a config fragment; secrets show as "<secret>", so a changed token file's content
 * is compared by revealing it here and nowhere else. */
export function fingerprint(v: unknown): string {
  return JSON.stringify(v, (_k, val: unknown) =>
    val && typeof val === 'object' && 'reveal' in val && typeof (val as { reveal: unknown }).reveal === 'function'
      ? `secret:${(val as { reveal(): string }).reveal().length}:${hash((val as { reveal(): string }).reveal())}`
      : val,
  );
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

import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { Logger } from '../util/log';
import { REGISTRATION_STATES } from './registration';
import { HOLDER_RECOVERIES, HolderRecovery } from './services';

const knownGate = z.enum(['deregisters_at_zero', 'serviceable_at_zero']);
import { registrationKey, RestartHandover, SavedState } from './handover';

// The little state that must survive an exporter restart, or a restart would end a page the
// exporter cannot re-derive: the stale canary of a watched service (the incident-2 witness: a
// fresh resolution after the restart no longer points at the old client id) and each app's
// registration history (whether it was ever registered, since when it is missing), without which
// the cause after a restart can only be "history unknown". Health and data are not persisted:
// after a restart nothing is claimed up before it was sampled again.

export const STATE_FILE = 'state.json';
/** Older state describes a world the exporter did not watch long enough to continue it. */
export const MAX_RESTORE_AGE_SECONDS = 15 * 60;
const SAVE_DEBOUNCE_MS = 2000;

const canarySchema = z.object({
  fullId: z.string(),
  clientId: z.string(),
  sinceSeconds: z.number(),
  staleSinceSeconds: z.number().optional(),
  pagedSeconds: z.number().optional(),
});

const heldIdSchema = z.object({
  name: z.string(),
  clientId: z.string(),
  sinceSeconds: z.number().optional(),
  staleSinceSeconds: z.number().optional(),
  pagedSeconds: z.number().optional(),
});

const workerSchema = z.object({
  holder: z.string(),
  version: z.string().optional(),
  recovery: z.custom<HolderRecovery>((v) => HOLDER_RECOVERIES.includes(v as HolderRecovery)),
  missingSinceSeconds: z.number().optional(),
});

const historySchema = z.object({
  deployedSeconds: z.number().optional(),
  birthObserved: z.boolean(),
  everRegistered: z.boolean(),
  registered: z.boolean().optional(),
  missingSinceSeconds: z.number().optional(),
  spellAfterReconnect: z.boolean().optional(),
  providerClientId: z.string().optional(),
  clientIdChanges: z.number().int().min(0),
  lastEvaluatedSeconds: z.number().optional(),
  lastState: z.enum(REGISTRATION_STATES).optional(),
  wokeSeconds: z.number().optional(),
  workerClientId: z.string().optional(),
  // Optional: files written before they existed still load (the gate is unknown until seen again).
  workerVersion: z.string().optional(),
  gateEvidence: z.object({ gate: knownGate, seenSeconds: z.number() }).optional(),
  zeroSinceSeconds: z.number().optional(),
  pageSpellSeconds: z.number().optional(),
  provenInSpell: z.boolean().optional(),
  pagedSeconds: z.number().optional(),
  workerClaimSeconds: z.number().optional(),
  workerSpellSeconds: z.number().optional(),
  workerPagedSeconds: z.number().optional(),
});

const serverIdSchema = z.object({
  current: z.string().optional(),
  previous: z.string().optional(),
  changed: z.boolean().optional(),
  replaced: z.array(z.string()),
});

const stateSchema = z.object({
  version: z.literal(1),
  savedSeconds: z.number(),
  witnesses: z.record(z.string(), canarySchema),
  registration: z.array(z.object({ cluster: z.string(), app: z.string(), history: historySchema })),
  // Optional: files written before it existed still load. Without it a restart forgets that a server
  // came back under another id (the ServerIdUnstable warning, and which stale ids are proven gone).
  serverIds: z.record(z.string(), serverIdSchema).optional(),
  // Optional likewise. Without it a restart starts a stale holder's spell, and its page's wait, anew.
  holders: z.record(z.string(), z.array(heldIdSchema)).optional(),
  // Optional likewise. Without it a restart (or `check`) during a Hypha restart, before the workers are listed
  // again, judges a stale witness without its holders: a self-healing witness pages.
  workers: z.record(z.string(), z.array(workerSchema)).optional(),
});

export type PersistedState = z.infer<typeof stateSchema>;

/** What the file keeps of the exporter's state: witnesses only while stale, histories of every judged app. */
export function persistedStateOf(saved: SavedState, nowSeconds: number): PersistedState {
  const witnesses: PersistedState['witnesses'] = {};
  for (const [service, canary] of saved.witnesses) {
    if (canary.staleSinceSeconds !== undefined) witnesses[service] = { ...canary };
  }
  // lastEvaluatedSeconds moves on every evaluation and only matters within one process (a reconnect):
  // left out, the file changes only when a history does, not after every sample.
  const registration = saved.registration.map((a) => ({
    cluster: a.cluster, app: a.app, history: { ...a.history, lastEvaluatedSeconds: undefined },
  }));
  // A connection that never reported an id has nothing to continue.
  const serverIds: NonNullable<PersistedState['serverIds']> = {};
  for (const [key, facts] of saved.serverIds) if (facts.current !== undefined) serverIds[key] = facts;
  const holders: NonNullable<PersistedState['holders']> = {};
  for (const [service, held] of saved.holders) {
    const stale = held.filter((h) => h.staleSinceSeconds !== undefined);
    if (stale.length > 0) holders[service] = stale.map((h) => ({ ...h }));
  }
  // The workers matter only to a stale witness (whether it is self-healing): kept with it.
  const workers: NonNullable<PersistedState['workers']> = {};
  for (const [service, known] of saved.workers) if (witnesses[service] && known.length > 0) workers[service] = known.map((w) => ({ ...w }));
  return { version: 1, savedSeconds: nowSeconds, witnesses, registration, serverIds, holders, workers };
}

/** Reads the state file; a missing, unreadable, malformed or too old file restores nothing (and says why). */
export function loadPersistedState(dir: string, log: Logger, nowSeconds = Date.now() / 1000): RestartHandover | undefined {
  const file = path.join(dir, STATE_FILE);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') log.warn({ file, error: (e as Error).message }, 'cannot read the state file; starting without history');
    return undefined;
  }
  let parsed: PersistedState;
  try {
    parsed = stateSchema.parse(JSON.parse(text));
  } catch (e) {
    const error = e instanceof z.ZodError ? e.issues.map((i) => `${i.path.join('.')}: ${i.message}`).slice(0, 3).join('; ') : (e as Error).message;
    log.warn({ file, error }, 'ignoring a malformed state file; starting without history');
    return undefined;
  }
  const age = nowSeconds - parsed.savedSeconds;
  if (age > MAX_RESTORE_AGE_SECONDS) {
    log.info({ file, age_seconds: Math.round(age) }, 'state file too old to continue from; starting without history');
    return undefined;
  }
  log.info({ file, age_seconds: Math.round(age), witnesses: Object.keys(parsed.witnesses).length, apps: parsed.registration.length },
    'continuing from the state saved before the restart');
  return {
    savedSeconds: parsed.savedSeconds,
    witnesses: new Map(Object.entries(parsed.witnesses)),
    registration: new Map(parsed.registration.map((r) => [registrationKey(r.cluster, r.app), r.history])),
    serverIds: new Map(Object.entries(parsed.serverIds ?? {})),
    holders: new Map(Object.entries(parsed.holders ?? {})),
    workers: new Map(Object.entries(parsed.workers ?? {})),
  };
}

/**
 * Writes the exporter's state (gathered by `collect` from the sources' handovers and the registration
 * stage) when it may have changed: after a snapshot change (debounced; atomically via rename) and once
 * more on stop. A directory that cannot be written is reported once and otherwise ignored: losing
 * history must not stop the exporter.
 */
export class PersistedStateWriter {
  #timer: NodeJS.Timeout | undefined;
  #last = '';
  #lastWriteMs = 0;
  #failing = false;
  #unsubscribe: (() => void) | undefined;

  constructor(
    private readonly dir: string,
    private readonly collect: () => SavedState,
    private readonly log: Logger,
  ) {}

  /** `changes`: every source publishes what changed its state, so a snapshot change is when to look again. */
  start(changes: { onChange(listener: () => void): () => void }): void {
    this.#unsubscribe = changes.onChange(() => {
      if (this.#timer) return;
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.flush();
      }, SAVE_DEBOUNCE_MS);
      this.#timer.unref();
    });
  }

  stop(): void {
    this.#unsubscribe?.();
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.flush();
  }

  flush(): void {
    const state = persistedStateOf(this.collect(), Date.now() / 1000);
    // savedSeconds moves every time; compare the content without it, but refresh the file now and
    // then so that an unchanged state does not look too old to continue from.
    const content = JSON.stringify({ ...state, savedSeconds: 0 });
    if (content === this.#last && Date.now() - this.#lastWriteMs < 60_000) return;
    const file = path.join(this.dir, STATE_FILE);
    const tmp = `${file}.${process.pid}.tmp`;
    try {
      fs.mkdirSync(this.dir, { recursive: true });
      fs.writeFileSync(tmp, JSON.stringify(state), { mode: 0o600 });
      fs.renameSync(tmp, file);
      this.#last = content;
      this.#lastWriteMs = Date.now();
      if (this.#failing) this.log.info({ file }, 'state file written again');
      this.#failing = false;
    } catch (e) {
      if (!this.#failing) {
        this.log.warn({ file, error: (e as Error).message }, 'cannot write the state file; a restart will lose witnesses and registration history');
      }
      this.#failing = true;
    }
  }
}

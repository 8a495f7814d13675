import { AppRegistration, isMissing, RegistrationState } from '../snapshot/registration';

/** One line the log should carry: the app's registration as now judged, and whether one was logged before. */
export interface LoggedTransition {
  a: AppRegistration;
  /** A state of this app was logged before (the line reports a change, not a first sight). */
  seenBefore: boolean;
}

interface Logged {
  state: RegistrationState;
  providerClientId?: string;
}

/**
 * Which registration changes the log reports. A missing registration is a warning only once it is
 * a judged state: the Serve reading it rests on was requested after the missing spell began. On a
 * first glimpse (an app Serve has just turned RUNNING whose proxy registers a fraction of a second
 * later, or a loss seen against an older Serve sample) the next event often contradicts it, and a
 * warning the next event contradicts is noise. Registered and not_running are reported when they
 * differ from what was last logged, so a glimpse that never reached the log leaves no trace.
 */
export class TransitionLog {
  /** By "hypha\0cluster", then app: apps arrive grouped by cluster, so the key is built once per cluster, not per app. */
  readonly #logged = new Map<string, Map<string, Logged & { mark: number }>>();
  #mark = 0;

  /**
   * The lines due for this evaluation; remembers them as logged.
   * @param requestedSeconds when the Serve sample of a cluster was requested (undefined: unknown, judged at once)
   */
  due(apps: readonly AppRegistration[], requestedSeconds: (cluster: string) => number | undefined): LoggedTransition[] {
    const out: LoggedTransition[] = [];
    const mark = ++this.#mark;
    let hypha: string | undefined;
    let cluster: string | undefined;
    let group: Map<string, Logged & { mark: number }> | undefined;
    for (const a of apps) {
      if (group === undefined || a.hypha !== hypha || a.cluster !== cluster) {
        hypha = a.hypha;
        cluster = a.cluster;
        const key = `${a.hypha}\u0000${a.cluster}`;
        group = this.#logged.get(key);
        if (!group) {
          group = new Map();
          this.#logged.set(key, group);
        }
      }
      const before = group.get(a.app);
      if (!a.settled) {
        // Present: what was logged of it is kept.
        if (before) before.mark = mark;
        continue;
      }
      if (before && before.state === a.state && before.providerClientId === a.providerClientId) {
        before.mark = mark;
        continue;
      }
      if (isMissing(a.state) && !judged(a, requestedSeconds(a.cluster))) {
        if (before) before.mark = mark;
        continue;
      }
      group.set(a.app, { state: a.state, providerClientId: a.providerClientId, mark });
      out.push({ a, seenBefore: before !== undefined });
    }
    for (const [key, g] of this.#logged) {
      for (const [app, l] of g) if (l.mark !== mark) g.delete(app);
      if (g.size === 0) this.#logged.delete(key);
    }
    return out;
  }
}

/** The missing spell was seen on a Serve sample requested after it began. */
function judged(a: AppRegistration, requestedSeconds: number | undefined): boolean {
  if (requestedSeconds === undefined || a.unregisteredSinceSeconds === undefined) return true;
  return requestedSeconds >= a.unregisteredSinceSeconds;
}

import type { HyphaEvent, ServiceInfo } from './types';

/**
 * The exporter's copy of Hypha's registry, per workspace: replaced by each
 * listServices, patched by events in between. An event that arrives while a
 * list call is in flight is replayed on top of that list's answer, so a
 * removal seen by event is not undone by a list taken just before it.
 */
export class RegistryView {
  readonly #byWorkspace = new Map<string, Map<string, ServiceInfo>>();
  readonly #inFlight = new Map<string, HyphaEvent[]>();
  /** The last snapshot(), kept until the view changes: the source publishes far more often than the registry moves. */
  #copy: ReadonlyMap<string, readonly ServiceInfo[]> | undefined;

  /** Workspaces listed since the last invalidate(). */
  known(workspace: string): boolean {
    return this.#byWorkspace.has(workspace);
  }

  services(workspace: string): readonly ServiceInfo[] {
    return [...(this.#byWorkspace.get(workspace)?.values() ?? [])];
  }

  counts(): Record<string, number> {
    return Object.fromEntries([...this.#byWorkspace].map(([ws, m]) => [ws, m.size]));
  }

  /** An immutable copy for the snapshot: services per listed workspace. */
  snapshot(): ReadonlyMap<string, readonly ServiceInfo[]> {
    this.#copy ??= new Map([...this.#byWorkspace].map(([ws, m]) => [ws, [...m.values()]]));
    return this.#copy;
  }

  /** Drops workspaces no longer listed (the mappings changed): their copy would only go stale. */
  retain(workspaces: readonly string[]): void {
    const keep = new Set(workspaces);
    for (const ws of [...this.#byWorkspace.keys()]) {
      if (!keep.has(ws)) {
        this.#byWorkspace.delete(ws);
        this.#copy = undefined;
      }
    }
  }

  /** Forget everything (a new connection: the old view may be stale). */
  invalidate(): void {
    this.#byWorkspace.clear();
    this.#inFlight.clear();
    this.#copy = undefined;
  }

  beginList(workspace: string): void {
    this.#inFlight.set(workspace, []);
  }

  /** Installs a list answer, then replays the events that arrived during the call. */
  finishList(workspace: string, services: readonly ServiceInfo[]): void {
    const pending = this.#inFlight.get(workspace) ?? [];
    this.#inFlight.delete(workspace);
    const m = new Map<string, ServiceInfo>();
    for (const s of services) if (s.workspace === workspace) m.set(s.id, s);
    this.#byWorkspace.set(workspace, m);
    this.#copy = undefined;
    for (const e of pending) this.#patch(e);
  }

  abortList(workspace: string): void {
    this.#inFlight.delete(workspace);
  }

  /** Applies an event; returns true when the view changed. */
  apply(e: HyphaEvent): boolean {
    const ws = workspaceOf(e);
    if (ws !== undefined) this.#inFlight.get(ws)?.push(e);
    const changed = this.#patch(e);
    if (changed) this.#copy = undefined;
    return changed;
  }

  #patch(e: HyphaEvent): boolean {
    switch (e.type) {
      case 'service_added':
      case 'service_updated': {
        const m = this.#byWorkspace.get(e.service.workspace);
        if (!m) return false;
        m.set(e.service.id, e.service);
        return true;
      }
      case 'service_removed': {
        return this.#byWorkspace.get(e.service.workspace)?.delete(e.service.id) ?? false;
      }
      case 'client_disconnected': {
        // Hypha sends no service_removed for a disconnecting client's services.
        const m = this.#byWorkspace.get(e.workspace);
        if (!m) return false;
        let changed = false;
        for (const [id, s] of m) {
          if (s.clientId === e.clientId) {
            m.delete(id);
            changed = true;
          }
        }
        return changed;
      }
      default:
        return false;
    }
  }
}

function workspaceOf(e: HyphaEvent): string | undefined {
  switch (e.type) {
    case 'service_added':
    case 'service_removed':
    case 'service_updated':
      return e.service.workspace;
    default:
      return e.workspace;
  }
}

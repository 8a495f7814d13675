// What a connection saw of the Hypha server's id across its rebuilds. Hypha takes the id from
// --server-id, then HYPHA_SERVER_ID, else a random one on every start (hypha/server.py,
// hypha/core/store.py), and its built-in services (the artifact manager among them) are provided by
// client `<server_id>`. A server that comes back under another id therefore never serves the old
// client id again: a proxy cached to it is stuck for good (incident 2).
import type { ServerIdFacts } from '../../snapshot/handover';

/** Replaced ids kept: enough for a few restarts while a holder's stale id is judged. */
const MAX_REPLACED = 8;

export class ServerIdWatch {
  #facts: ServerIdFacts;

  /** Takes the facts handed over: by a predecessor (a source restarted by a reload) or by the restart handover. */
  constructor(handover?: ServerIdFacts) {
    this.#facts = handover ? { ...handover, replaced: [...handover.replaced] } : { replaced: [] };
  }

  /**
   * A connection reported `id` (undefined when the server did not say). Returns the change when a
   * comeback is under another id than the last one seen; the same id again is a comeback under a
   * stable id.
   */
  seen(id: string | undefined, comeback: boolean): { from: string; to: string } | undefined {
    if (id === undefined) return undefined;
    const before = this.#facts.current;
    if (before === undefined) {
      this.#facts = { ...this.#facts, current: id };
      return undefined;
    }
    if (before === id) {
      if (comeback) this.#facts = { ...this.#facts, changed: false };
      return undefined;
    }
    const replaced = [...this.#facts.replaced.filter((r) => r !== before && r !== id), before].slice(-MAX_REPLACED);
    this.#facts = { current: id, previous: before, changed: true, replaced };
    return { from: before, to: id };
  }

  /** True when `clientId` is a server id this connection saw replaced by another. */
  replacedServer(clientId: string): boolean {
    return clientId !== this.#facts.current && this.#facts.replaced.includes(clientId);
  }

  get facts(): ServerIdFacts {
    return this.#facts;
  }
}

import type { SourceHealth } from './health';
import type { WorkerSample } from './registration';

// What one Hypha source publishes (Snapshot.hypha, by configured server name): its connection,
// its copy of the registry and what the BioEngine workers it asked said. It judges nothing; the
// registration stage joins this with the Ray part.

/** A service as listed by Hypha (ServiceInfo.model_dump(), without the schema). */
export interface ServiceInfo {
  /** Full id "workspace/clientId:serviceId" (never carries "@app"). */
  id: string;
  workspace: string;
  clientId: string;
  serviceId: string;
  name?: string;
  type?: string;
  description?: string;
  appId?: string;
  visibility?: string;
}

export interface HyphaServerSample {
  /** Configured Hypha server name (the `hypha` label). */
  target: string;
  health: SourceHealth;
  /** Successful connections after the first one. */
  reconnectsTotal: number;
  /** Number of the current connection (1 = first). */
  generation: number;
  workspace?: string;
  serverId?: string;
  /**
   * The server came back (a rebuilt connection) under another id than the previous connection's:
   * true; under the same id: false; undefined until a comeback was seen.
   */
  serverIdChanged?: boolean;
  /** The server id of the connection before the current one, when known. */
  previousServerId?: string;
  /**
   * When the current connection's first full listing completed (Unix seconds); 0 while not
   * connected or not yet listed: the registry below is then not a reading of this connection.
   */
  listedSeconds: number;
  /** Connections whose registry was listed; more than 1 means the view is from after a reconnect. */
  connectionsListed: number;
  /** Services per workspace listed on the current connection (absent workspace: not listed). */
  registry: ReadonlyMap<string, readonly ServiceInfo[]>;
  workers: WorkerSample[];
  /** Listing entries Hypha returned that could not be read (dropped, counted). */
  malformedTotal: number;
}

import { z } from 'zod';
import { parseServiceId, splitWorkspace } from '../../util/hypha-id';
import type { ServiceInfo } from '../../snapshot/hypha';

export type { ServiceInfo };

// Typed views of what hypha-rpc hands back untyped. Everything from the wire
// is parsed here before it reaches the rest of the exporter.


export const SYSTEM_EVENTS = [
  'service_added',
  'service_removed',
  'service_updated',
  'client_connected',
  'client_disconnected',
  'client_updated',
  'workspace_loaded',
  'workspace_deleted',
  'workspace_changed',
  'workspace_ready',
  'workspace_unloaded',
  'workspace_status_changed',
] as const;
export type HyphaEventType = (typeof SYSTEM_EVENTS)[number];

export const SERVICE_EVENTS = ['service_added', 'service_removed', 'service_updated'] as const;
export const CLIENT_EVENTS = ['client_connected', 'client_disconnected', 'client_updated'] as const;
export type ServiceEventType = (typeof SERVICE_EVENTS)[number];
export type ClientEventType = (typeof CLIENT_EVENTS)[number];
export type WorkspaceEventType = Exclude<HyphaEventType, ServiceEventType | ClientEventType>;

interface EventBase {
  /** Date.now() when the event reached this process. */
  receivedAtMs: number;
  /** Connection generation that delivered it. */
  generation: number;
}

export type HyphaEvent =
  | (EventBase & { type: ServiceEventType; service: ServiceInfo })
  | (EventBase & {
      type: ClientEventType;
      /** Bare client id (client_connected's "ws/client" is normalised to it). */
      clientId: string;
      workspace: string;
    })
  | (EventBase & { type: WorkspaceEventType; workspace?: string });

/** Query of list_services; omitted fields match everything. */
export interface ListServicesQuery {
  workspace?: string;
  clientId?: string;
  serviceId?: string;
  type?: string;
  visibility?: 'public' | 'protected' | 'unlisted';
}

const optText = z.string().nullish().transform((v) => v ?? undefined);

const rawServiceInfo = z.object({
  id: z.string(),
  name: optText,
  type: optText,
  description: optText,
  app_id: optText,
  config: z
    .object({ visibility: optText, workspace: optText })
    .nullish(),
});

export function parseServiceInfo(raw: unknown): ServiceInfo | undefined {
  const r = rawServiceInfo.safeParse(raw);
  if (!r.success) return undefined;
  const ids = parseServiceId(r.data.id);
  if (!ids) return undefined;
  return {
    id: `${ids.workspace}/${ids.clientId}:${ids.serviceId}`,
    ...ids,
    name: r.data.name,
    type: r.data.type,
    description: r.data.description,
    appId: r.data.app_id,
    visibility: r.data.config?.visibility,
  };
}

/** Parses a list; malformed entries are skipped and counted rather than failing the whole list. */
export function parseServiceList(raw: unknown): { services: ServiceInfo[]; malformed: number } | undefined {
  if (!Array.isArray(raw)) return undefined;
  const services: ServiceInfo[] = [];
  let malformed = 0;
  for (const item of raw) {
    const s = parseServiceInfo(item);
    if (s) services.push(s);
    else malformed++;
  }
  return { services, malformed };
}

const rawClientEventData = z.object({ id: z.string(), workspace: z.string().nullish() });
const rawEventMessage = z.object({ type: z.string(), data: z.unknown() });

/** Turns a raw event message into a typed event; undefined when it is not one we understand. */
export function parseEvent(raw: unknown, receivedAtMs: number, generation: number): HyphaEvent | undefined {
  const m = rawEventMessage.safeParse(raw);
  if (!m.success) return undefined;
  const type = m.data.type;
  const base = { receivedAtMs, generation };
  if ((SERVICE_EVENTS as readonly string[]).includes(type)) {
    const service = parseServiceInfo(m.data.data);
    return service ? { ...base, type: type as ServiceEventType, service } : undefined;
  }
  if ((CLIENT_EVENTS as readonly string[]).includes(type)) {
    const d = rawClientEventData.safeParse(m.data.data);
    if (!d.success) return undefined;
    let clientId = d.data.id;
    let workspace = d.data.workspace ?? undefined;
    const split = splitWorkspace(clientId);
    if (split.workspace !== undefined) {
      workspace = workspace ?? split.workspace;
      clientId = split.rest;
    }
    if (!workspace) return undefined;
    return { ...base, type: type as ClientEventType, clientId, workspace };
  }
  if ((SYSTEM_EVENTS as readonly string[]).includes(type)) {
    const d = z.object({ workspace: z.string().optional(), id: z.string().optional() }).safeParse(m.data.data);
    const workspace = d.success ? (d.data.workspace ?? d.data.id) : undefined;
    return { ...base, type: type as WorkspaceEventType, workspace };
  }
  return undefined;
}

/** The parts of connection_info we use. */
export interface ConnectionInfo {
  workspace: string;
  clientId: string;
  managerId: string;
  hyphaVersion?: string;
  serverId?: string;
  userId?: string;
}

const rawConnectionInfo = z.object({
  workspace: z.string(),
  client_id: z.string(),
  manager_id: z.string(),
  hypha_version: optText,
  serverId: optText,
  server_id: optText,
  user: z.object({ id: z.string().nullish() }).nullish(),
});

export function parseConnectionInfo(raw: unknown): ConnectionInfo | undefined {
  const r = rawConnectionInfo.safeParse(raw);
  if (!r.success) return undefined;
  return {
    workspace: r.data.workspace,
    clientId: r.data.client_id,
    managerId: r.data.manager_id,
    hyphaVersion: r.data.hypha_version,
    // The wm config carries serverId (camel-cased); manager ids are "manager-<server_id>".
    serverId: r.data.serverId ?? r.data.server_id ?? (r.data.manager_id.startsWith('manager-') ? r.data.manager_id.slice(8) : undefined),
    userId: r.data.user?.id ?? undefined,
  };
}

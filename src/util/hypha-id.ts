// Hypha's ids in one place: a service is "workspace/clientId:serviceId" (a listing may append
// "@appId"), a client "workspace/clientId", and a watched service is named "workspace/serviceId".

/** "ws/client:svc" (or "ws/client:svc@app") → its parts; undefined when it is not that shape. */
export function parseServiceId(id: string): { workspace: string; clientId: string; serviceId: string } | undefined {
  const { workspace, rest } = splitWorkspace(id);
  if (workspace === undefined || workspace === '') return undefined;
  const colon = rest.indexOf(':');
  if (colon <= 0 || colon === rest.length - 1) return undefined;
  return { workspace, clientId: rest.slice(0, colon), serviceId: rest.slice(colon + 1).split('@')[0] };
}

/** "ws/rest" → { workspace: "ws", rest }; without a "/", the workspace is undefined and rest is the whole id. */
export function splitWorkspace(ref: string): { workspace?: string; rest: string } {
  const slash = ref.indexOf('/');
  return slash < 0 ? { rest: ref } : { workspace: ref.slice(0, slash), rest: ref.slice(slash + 1) };
}

/** The client part of "ws/client:svc", "ws/client" or "client" (an "@app" suffix ignored); undefined when empty or absurd. */
export function clientIdOf(id: string): string | undefined {
  const { rest } = splitWorkspace(id.trim().split('@')[0]);
  const colon = rest.indexOf(':');
  const s = colon >= 0 ? rest.slice(0, colon) : rest;
  return s.length > 0 && s.length <= 256 ? s : undefined;
}

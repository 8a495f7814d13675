import type { ClusterMapping } from '../../config/hypha-schema';
import { splitWorkspace } from '../../util/hypha-id';

/** Workspaces the mappings can point at, given the connection's (listed every cycle). */
export function mappedWorkspaces(mappings: readonly ClusterMapping[], connectionWorkspace: string): string[] {
  const out = new Set<string>([connectionWorkspace]);
  for (const m of mappings) {
    if (m.bioengine.enabled) out.add(m.bioengine.workspace ?? connectionWorkspace);
    for (const t of m.templates) {
      const ws = splitWorkspace(t.service).workspace ?? '';
      out.add(ws === '{workspace}' ? (t.workspace ?? connectionWorkspace) : ws);
    }
  }
  return [...out];
}

// How the last reads of --web.config.file went, for the hypha_serve_exporter_web_config_* families
// (src/metrics/families.ts, process scope). Module state because there is one web config per process
// and its reloader (server/web-config-reloader.ts) lives in the server, beside no snapshot; unset without
// --web.config.file, and then those families have no series.

export interface WebConfigReloadStatus {
  /** The last read of a changed file (or the first load) was applied. */
  ok: boolean;
  /** When a read was last applied (Unix seconds). */
  lastSuccessSeconds: number;
  /** Changed contents that could not be applied (the previous config kept), since the start. */
  failuresTotal: number;
}

let current: WebConfigReloadStatus | undefined;

export function webConfigStatus(): WebConfigReloadStatus | undefined {
  return current;
}

export function setWebConfigStatus(s: WebConfigReloadStatus | undefined): void {
  current = s;
}

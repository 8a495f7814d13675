import type { ExpositionFormat } from './text';

interface Offer {
  value: string;
  params: Map<string, string>;
  q: number;
}

function parseList(header: string): Offer[] {
  const out: Offer[] = [];
  for (const item of header.split(',')) {
    const [raw, ...rest] = item.split(';');
    const value = raw.trim().toLowerCase();
    if (value === '') continue;
    const params = new Map<string, string>();
    let q = 1;
    for (const p of rest) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      const k = p.slice(0, eq).trim().toLowerCase();
      const v = p.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1');
      if (k === 'q') {
        const n = Number(v);
        q = Number.isFinite(n) ? Math.min(1, Math.max(0, n)) : 0;
      } else {
        params.set(k, v);
      }
    }
    out.push({ value, params, q });
  }
  return out;
}

/**
 * OpenMetrics 1.0 when the client prefers it (Prometheus sends
 * `application/openmetrics-text;version=1.0.0;q=0.5,...,text/plain;version=0.0.4;q=0.x` with
 * OpenMetrics first when enabled), else the 0.0.4 text format. An OpenMetrics version other than
 * 1.0.0 is not served (0.0.1 differs in details this renderer does not implement).
 */
export function negotiateFormat(accept: string | undefined): ExpositionFormat {
  if (!accept) return 'prometheus';
  let om = -1;
  let text = -1;
  for (const o of parseList(accept)) {
    if (o.q <= 0) continue;
    if (o.value === 'application/openmetrics-text') {
      const v = o.params.get('version');
      if (v === undefined || v === '1.0.0') om = Math.max(om, o.q);
    } else if (o.value === 'text/plain' || o.value === 'text/*' || o.value === '*/*') {
      text = Math.max(text, o.q);
    }
  }
  return om > 0 && om >= text ? 'openmetrics' : 'prometheus';
}

/** gzip when accepted with q > 0 (as the Go client library does); identity otherwise. */
export function negotiateEncoding(acceptEncoding: string | undefined): 'gzip' | 'identity' {
  if (!acceptEncoding) return 'identity';
  let gzip = -1;
  let star = -1;
  for (const o of parseList(acceptEncoding)) {
    if (o.value === 'gzip' || o.value === 'x-gzip') gzip = Math.max(gzip, o.q);
    else if (o.value === '*') star = o.q;
  }
  if (gzip === -1) gzip = star;
  return gzip > 0 ? 'gzip' : 'identity';
}

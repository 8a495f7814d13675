// Exposition text: escaping, sample lines and family headers for the Prometheus text format
// 0.0.4 and OpenMetrics 1.0. Sample lines are identical in both formats for the families this
// exporter has (counters are named *_total already), so pre-rendered lines serve either; only
// the headers and the trailing "# EOF" differ.

export type ExpositionFormat = 'prometheus' | 'openmetrics';
export type MetricType = 'gauge' | 'counter' | 'histogram';

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
export const OPENMETRICS_CONTENT_TYPE = 'application/openmetrics-text; version=1.0.0; charset=utf-8';

const NEEDS_ESCAPE = /[\\"\n]/;

/** Label value escaping shared by both formats: backslash, double quote and line feed; everything else (unicode included) is literal UTF-8. */
export function escapeLabelValue(v: string): string {
  if (!NEEDS_ESCAPE.test(v)) return v;
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

/** HELP text: the 0.0.4 format escapes backslash and line feed only; OpenMetrics escapes like a label value. */
export function escapeHelp(help: string, format: ExpositionFormat): string {
  const t = help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
  return format === 'openmetrics' ? t.replace(/"/g, '\\"') : t;
}

export function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

/** `name{a="x",b="y"} value\n`. An undefined value leaves its label out; "" is written (`l=""`), as prom-client did. */
export function sampleLine(name: string, labelNames: readonly string[], labelValues: readonly (string | undefined)[], value: number): string {
  let s = name;
  let open = false;
  for (let i = 0; i < labelNames.length; i++) {
    const v = labelValues[i];
    if (v === undefined) continue;
    s += open ? ',' : '{';
    open = true;
    s += `${labelNames[i]}="${escapeLabelValue(v)}"`;
  }
  if (open) s += '}';
  return `${s} ${formatValue(value)}\n`;
}

/** OpenMetrics names a counter family without its _total suffix (the samples keep it). */
export function familyName(name: string, type: MetricType, format: ExpositionFormat): string {
  return format === 'openmetrics' && type === 'counter' ? name.replace(/_total$/, '') : name;
}

export function header(name: string, type: MetricType, help: string, format: ExpositionFormat): string {
  const n = familyName(name, type, format);
  return `# HELP ${n} ${escapeHelp(help, format)}\n# TYPE ${n} ${type}\n`;
}

// The rule model the groups are built in and the renderer writes.
import type { AlertName, MixinConfig } from './config';

export interface RecordingRule {
  record: string;
  expr: string;
  labels?: Record<string, string>;
  /** Why the rule exists and what its values mean; emitted as a YAML comment and in docs/alerts.md. */
  comment: string;
}

export interface AlertingRule {
  alert: AlertName;
  expr: string;
  for: string;
  keep_firing_for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  comment: string;
}

export type Rule = RecordingRule | AlertingRule;

export function isAlert(r: Rule): r is AlertingRule {
  return 'alert' in r;
}

/**
 * A rule group: Prometheus evaluates its rules in order at one timestamp, so an alert placed after
 * the recording rules it reads sees this evaluation's values (a real fix resolves at once).
 */
export interface Group {
  name: string;
  rules: Rule[];
}

/**
 * A template without the spaces just inside its `{{ }}` (a `{{- ` or ` -}}` trim marker keeps its own):
 * the expanded text is the same. Prometheus parses every label and annotation template anew for every
 * active alert at every evaluation, and Prometheus 2.42 (Debian's, built with Go 1.19, whose template
 * lexer hands each token to the parser over a channel) pays per token, each space inside an action one:
 * at 1,000 paging apps this takes about 30 ms per evaluation off HyphaServeAppRunningNotRegistered
 * (BENCHMARKS.md "Rule evaluation cost").
 */
export function compact(template: string): string {
  return template.replace(/\{\{ +(?!-)/g, '{{').replace(/(?<!-) +\}\}/g, '}}');
}

/** An alert with the settings the configuration gives it (severity, for, keep_firing_for, runbook). */
export function alert(
  c: MixinConfig,
  name: AlertName,
  rest: { expr: string; comment: string; annotations: Record<string, string>; labels?: Record<string, string> },
): AlertingRule {
  const s = c.alerts[name];
  return {
    alert: name,
    expr: rest.expr,
    for: s.for,
    ...(s.keep_firing_for ? { keep_firing_for: s.keep_firing_for } : {}),
    labels: compactEach({ ...c.rule_labels, severity: s.severity, ...(rest.labels ?? {}) }),
    annotations: compactEach({ ...c.rule_annotations, ...rest.annotations, runbook_url: c.runbook_url_template.replace('%s', name) }),
    comment: rest.comment,
  };
}

function compactEach(templates: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(templates).map(([k, v]) => [k, compact(v)]));
}

// A namespaced AlertmanagerConfig (monitoring.coreos.com/v1alpha1) as the Prometheus Operator renders it into the
// Alertmanager's own configuration (pkg/alertmanager/amcfg.go v0.85.0, matcher strategy OnNamespace, Alertmanager
// 0.22 or later): its route under the root route with `namespace="<its namespace>"` added to its matchers and
// `continue: true`, its receivers named <namespace>/<name>/<receiver>, and `namespace="<its namespace>"` added to both
// sides of each inhibition rule. So the routing tests can run it in a real Alertmanager and check it with amtool.

export interface AmcMatcher {
  name: string;
  value: string;
  matchType?: '=' | '!=' | '=~' | '!~';
}

interface AmcRoute {
  receiver?: string;
  groupBy?: string[];
  groupWait?: string;
  groupInterval?: string;
  repeatInterval?: string;
  matchers?: AmcMatcher[];
  continue?: boolean;
  routes?: AmcRoute[];
}

export interface AlertmanagerConfigObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string };
  spec: {
    route: AmcRoute;
    receivers: { name: string; webhookConfigs?: { url: string; sendResolved?: boolean }[] }[];
    inhibitRules?: { sourceMatch: AmcMatcher[]; targetMatch: AmcMatcher[]; equal: string[] }[];
  };
}

export interface PlainRoute {
  receiver?: string;
  group_by?: string[];
  group_wait?: string;
  group_interval?: string;
  repeat_interval?: string;
  matchers?: string[];
  continue?: boolean;
  routes?: PlainRoute[];
}

export interface PlainInhibitRule {
  source_matchers: string[];
  target_matchers: string[];
  equal: string[];
}

/** The matcher as Alertmanager's matchers syntax writes it (the operator's Matcher.String()). */
export function matcherText(m: AmcMatcher): string {
  return `${m.name}${m.matchType ?? '='}${JSON.stringify(m.value)}`;
}

function route(r: AmcRoute, prefix: string, top: string[]): PlainRoute {
  const out: PlainRoute = {};
  if (r.receiver !== undefined) out.receiver = prefix + r.receiver;
  if (r.groupBy) out.group_by = r.groupBy;
  if (r.groupWait) out.group_wait = r.groupWait;
  if (r.groupInterval) out.group_interval = r.groupInterval;
  if (r.repeatInterval) out.repeat_interval = r.repeatInterval;
  const matchers = [...(r.matchers ?? []).map(matcherText), ...top];
  if (matchers.length > 0) out.matchers = matchers;
  if (r.continue || top.length > 0) out.continue = true;
  if (r.routes) out.routes = r.routes.map((s) => route(s, prefix, []));
  return out;
}

/** The Alertmanager configuration the operator renders from one AlertmanagerConfig, under a root route to `rootReceiver`. */
export function renderAlertmanagerConfig(amc: AlertmanagerConfigObject, rootReceiver = 'null'): {
  route: PlainRoute;
  receivers: Record<string, unknown>[];
  inhibit_rules: PlainInhibitRule[];
} {
  const { namespace, name } = amc.metadata;
  const prefix = `${namespace}/${name}/`;
  const ns = matcherText({ name: 'namespace', value: namespace });
  return {
    route: { receiver: rootReceiver, routes: [route(amc.spec.route, prefix, [ns])] },
    receivers: [
      { name: rootReceiver },
      ...amc.spec.receivers.map((r) => ({
        name: prefix + r.name,
        ...(r.webhookConfigs ? { webhook_configs: r.webhookConfigs.map((w) => ({ url: w.url, send_resolved: w.sendResolved ?? true })) } : {}),
      })),
    ],
    inhibit_rules: (amc.spec.inhibitRules ?? []).map((i) => ({
      source_matchers: [...i.sourceMatch.map(matcherText), ns],
      target_matchers: [...i.targetMatch.map(matcherText), ns],
      equal: i.equal,
    })),
  };
}

// Group hypha-serve-registration: incident 1 (a Serve app RUNNING whose Hypha service is not
// registered) as Ray Serve and the registry see it, and the warning before it. The worker's view of
// the same incident is group hypha-serve-worker (worker.ts).
import { parseDuration } from '../../src/util/duration';
import type { RegistrationState } from '../../src/snapshot/registration';
import type { MixinConfig } from './config';
import { alert, Group } from './model';
import { block, bridge, humanDuration, ID, labels, m, prose, queryOf, registrationGuards } from './promql';
import { pageRules } from './waits';

export const REGISTRATION = {
  runningNotRegistered: 'ray_cluster_app:hypha_serve_app_running_not_registered:bool',
  runningNotRegisteredBridged: 'ray_cluster_app:hypha_serve_app_running_not_registered:bridged',
  stuckBridged: 'ray_cluster_app:hypha_serve_app_registration_stuck:bridged',
  stuckHeld: 'ray_cluster_app:hypha_serve_app_registration_stuck:held',
  page: 'ray_cluster_app:hypha_serve_app_running_not_registered:page',
  causeDigits: 'ray_cluster_app:hypha_serve_app_registration_state:cause_digits',
  context: 'ray_cluster_app:hypha_serve_app_not_registered:context',
  deregistersAtZero: 'ray_cluster_app:hypha_serve_app_deregisters_at_zero:bool',
  deregistersAtZeroBridged: 'ray_cluster_app:hypha_serve_app_deregisters_at_zero:bridged',
} as const;

/**
 * Registration state -> the sentence a page gives for it (the runbook branch to take). A total map:
 * a state added to the exporter fails to compile here until the page can explain it. No `,` or `=`:
 * vmalert keys a recorded series by `name=value,...` and splits that key to write the staleness marker
 * of a series that left the result (app/vmalert/rule/recording.go, stringToLabels, v1.151.0), so a
 * label value with either gets its marker on another series and the old context lingers for 5 min.
 */
export const CAUSE_TEXT: Record<RegistrationState, string> = {
  missing_scaled_to_zero: 'it was registered and disappeared while a deployment of the app was idle at zero replicas (incident 1a)',
  missing_never_registered: 'this exporter saw the deployment come up and it has never been registered since (incident 1b)',
  missing_crashed: 'a deployment of the app is DEPLOY_FAILED or UNHEALTHY or a sibling deployment cannot serve',
  missing_after_reconnect: 'it was registered before a Hypha outage and has not re-registered since the exporter reconnected',
  missing_history_unknown: 'it was already missing when the exporter started; whether it was ever registered is unknown',
  missing_other: 'none of the causes the exporter can tell apart applies',
  registered: 'the service is registered again',
  not_running: 'Serve is (re)deploying or deleting the app: no registration is due',
};

/**
 * The registration states in the order of the page's cause list (by name, as the context's
 * sortByLabel "state"), one decimal digit each in the cause_digits record: the k-th state is 10^(n-1-k).
 */
export const CAUSE_ORDER = (Object.keys(CAUSE_TEXT) as RegistrationState[]).sort();

/** A registration state's digit in cause_digits. */
function digitOf(state: RegistrationState): number {
  return 10 ** (CAUSE_ORDER.length - 1 - CAUSE_ORDER.indexOf(state));
}

/**
 * The cause_digits record (its rule comment says what it holds), read straight from the exporter's state
 * set: per state a term that is the state's digit where some replica reports it as 1, summed per app.
 */
function causeDigits(c: MixinConfig, id: string, page: string): string {
  const state = m('hypha_serve_app_registration_state');
  const terms = (states: RegistrationState[], read: (selector: string) => string) =>
    states.map((s) => `(max by (${id}, state) (${read(`${state}{state="${s}"}`)}) == 1) * ${digitOf(s)}`).join('\n        or\n          ');
  const missing = CAUSE_ORDER.filter((s) => s.startsWith('missing_'));
  const others = CAUSE_ORDER.filter((s) => !missing.includes(s));
  return block(`
      sum by (${id}) (
          ${terms(missing, (sel) => sel)}
      )
    or on (${id})
      sum by (${id}) (
          ${terms(others, (sel) => sel)}
      )
    or on (${id})
      sum by (${id}) (
          ${terms(CAUSE_ORDER, (sel) => `last_over_time(${sel}[${c.bridge}])`)}
      )
    or on (${id})
      ${page} * 0
  `);
}

/**
 * One series per cause of a page, from its cause_digits, value 1: labels state and reason (the cause in a
 * sentence, the runbook branch, from the total map above, so the page template prints a label instead of
 * parsing an eight-way branch for every alert at every evaluation). A state is a cause where its digit d is
 * 1: the digits below it are 0 or 1, so the remainder below the next digit is at least d and below 2d.
 */
function causesOf(digits: string): string {
  const terms = CAUSE_ORDER.map((s) => {
    const d = digitOf(s);
    const one = `floor((${digits} % ${d * 10} >= ${d}) / ${d})`;
    return `label_replace(label_replace(${one}, "state", "${s}", "", ""), "reason", "${CAUSE_TEXT[s].replace(/"/g, '\\"')}", "", "")`;
  });
  return `(\n    ${terms.join('\n  or\n    ')}\n)`;
}

/**
 * The `cause` annotation from the alert's value (its cause digits): one cause, the usual case, is a
 * power of ten and is named by a comparison, with no query. Several (an HA pair whose replicas
 * disagree) and none (0: no state known, or an engine whose digits lag) are listed from the context
 * series, by the one query this annotation makes. Comparisons, not a digit-by-digit decode: Prometheus parses every annotation template
 * anew for every alert at every evaluation, so the template's size is a cost at 1,000 pages.
 */
function causeFromDigits(c: MixinConfig, context: string, id: readonly string[]): string {
  const one = CAUSE_ORDER.map((state, k) => `{{ ${k ? 'else if' : 'if'} eq $value ${digitOf(state).toFixed(1)} }}${state}`);
  const several = `{{ range $i, $c := ${queryOf(c, context, id)} | sortByLabel "state" }}{{ if $i }}, {{ end }}{{ $c.Labels.state }}{{ else }}unknown{{ end }}`;
  return `${one.join('')}{{ else }}${several}{{ end }}`;
}

export function registrationGroup(c: MixinConfig): Group {
  const R = REGISTRATION;
  const l = labels(c);
  const app = l.of(...ID.app);
  const B = c.bridge;
  const waits = c.cause_waits.HyphaServeAppRunningNotRegistered;
  const state = m('hypha_serve_app_registration_state');
  const uncertain = humanDuration(formatTotal(waits.uncertain, c.alerts.HyphaServeAppRunningNotRegistered.for));
  const ctx = `{{ $ctx := ${queryOf(c, R.context, ID.app)} | sortByLabel "state" }}`;
  return {
    name: 'hypha-serve-registration',
    rules: [
      {
        record: R.runningNotRegistered,
        comment:
          'Per exporter replica, incident 1: 1 = the app is RUNNING in Ray and in a missing_* registration state, 0 = not; ' +
          'absent while its own Ray cluster or its own Hypha server is not sampled (or the exporter is settling after a reconnect).',
        expr: block(`
          (
              max without (state) (${state}{state=~"missing_.*"})
            * on (${l.of('instance', ...ID.app.slice(0, 2))}) group_left ()
              max without (status) (${m('hypha_serve_app_status')}{status="RUNNING"})
          )
          ${registrationGuards(l).replace(/\n/g, '\n          ')}
        `),
      },
      ...pageRules(c, {
        fact: R.runningNotRegistered,
        factBridged: R.runningNotRegisteredBridged,
        factComment: `Incident 1's fact per app, over the exporter replicas and bridged: the replicas that know it now, else the last value within ${B}.`,
        proofMetric: m('hypha_serve_app_registration_stuck'),
        proofBridged: R.stuckBridged,
        proofHeld: R.stuckHeld,
        proofComment:
          'The proof of incident 1, bridged: 1 = the exporter proves the app will not register by itself (a BioEngine ' +
          'deployment it gates on is idle at zero, and only a call through the missing service would wake it).',
        page: R.page,
        pageComment:
          `HyphaServeAppRunningNotRegistered's condition: 1 = the bridged fact holds and either it has held for ${waits.uncertain} ` +
          `(cause_waits.uncertain: longer than BioEngine's own recovery, its proxy registering from check_health every 10 s after ` +
          `hypha-rpc's reconnect backoff of up to 66 s) or the exporter proved the cause final within the last ${waits.uncertain} ` +
          '(a page that fired on the proof is held while the fact holds until the uncertain wait takes over); 0 = the fact holds ' +
          'without either, or does not hold; absent while unknown for longer than the bridge.',
        id: ID.app,
        waits,
      }),
      {
        record: R.causeDigits,
        comment:
          `The page's causes as one number, for the cause annotation without a query: a decimal digit per registration state ` +
          `(${CAUSE_ORDER.join(', ')}, from the left), 1 where the state is a cause: the missing_* states that a replica ` +
          'reports now, else the states reported now (registered or not_running; in an HA pair a replica not scraped since ' +
          'the app left still says registered, which is no cause while another says missing), else in a gap each state\'s ' +
          `last value within ${B}; 0 while the page condition is recorded but no state is known. One series per app whose ` +
          'value changes with the cause (on VictoriaMetrics a recorded series that is new is readable only evaluations later).',
        expr: causeDigits(c, app, R.page),
      },
      {
        record: R.context,
        comment:
          'What the page says, one series per cause (state): labels reason (the cause in a sentence, the runbook branch), ' +
          'service (the expected service id, "(unknown)" when the exporter has none) and proven ("true" while the exporter ' +
          'proves the cause final); value: seconds since the service went missing, -1 when unknown.',
        expr: block(`
            ${causesOf(R.causeDigits).replace(/\n/g, '\n            ')}
          * on (${app}) group_left (service)
            topk by (${app}) (1,
                max by (${app}, service) (${m('hypha_serve_app_expected_service_info')})
              or on (${app})
                max by (${app}, service) (last_over_time(${m('hypha_serve_app_expected_service_info')}[${B}]))
              or on (${app})
                label_replace(group by (${app}) (${R.causeDigits}), "service", "(unknown)", "", "")
            )
          * on (${app}) group_left ()
            (
                time() - min by (${app}) (last_over_time(${m('hypha_serve_app_unregistered_since_timestamp_seconds')}[${B}]))
              or on (${app})
                ${R.causeDigits} * 0 - 1
            )
          * on (${app}) group_left (proven)
            (
                label_replace(${R.stuckBridged} == 1, "proven", "true", "", "")
              or on (${app})
                label_replace(group by (${app}) (${R.causeDigits}), "proven", "false", "", "")
            )
        `),
      },
      alert(c, 'HyphaServeAppRunningNotRegistered', {
        comment:
          `Identity (${app}): the expected service id changes while the condition holds (a worker restart), so it is in ` +
          `the text only. Per-cause wait: ${R.page}. The value is ${R.causeDigits}, which the cause annotation reads.`,
        expr: `${R.causeDigits} and on (${app}) ${R.page} == 1\n`,
        annotations: {
          summary: 'Serve app is RUNNING but its Hypha service is not registered.',
          cause: causeFromDigits(c, R.context, ID.app),
          description: prose(`
            ${ctx}Ray Serve app {{ $labels.app }} on Ray cluster {{ $labels.ray_cluster }} is RUNNING, but its expected Hypha
            service {{ with $ctx }}{{ $c := first . }}{{ $c.Labels.service }} has been absent from the registry of Hypha server
            {{ $labels.hypha }}{{ if eq $c.Labels.proven "true" }}, and BioEngine will not register it by itself: a deployment it
            gates on is idle at zero and only a call through the missing service would wake it{{ else }} for more than
            ${uncertain}{{ end }}{{ if ge $c.Value 0.0 }} (missing for {{ humanizeDuration $c.Value }}){{ end }}. Cause:
            {{ range $i, $x := . }}{{ if $i }}; {{ end }}{{ $x.Labels.state }}: {{ $x.Labels.reason }}{{ end }}{{ else }}(unknown)
            has been absent from the registry of Hypha server {{ $labels.hypha }} for more than ${uncertain}. Cause: unknown (no
            registration state in the last ${humanDuration(B)}){{ end }}. Callers get "Service not found" while Ray and the
            worker look healthy.
          `),
        },
      }),
      {
        record: R.deregistersAtZero,
        comment:
          'Per exporter replica, the warning before incident 1a: 1 = the app is registered, its registrant is BioEngine\'s ' +
          'ProxyDeployment (hypha_serve_app_bioengine_proxy), and a deployment of it autoscales with min_replicas 0: when ' +
          'that deployment idles to zero the proxy deregisters the service (bioengine proxy_deployment.py check_health, ' +
          '0.13.0 to 0.16.1). 0 = min_replicas >= 1 everywhere, not registered, or not a BioEngine app; absent while unknown.',
        expr: block(`
            (
                max without (deployment) (
                    (${m('hypha_serve_deployment_min_replicas')} == bool 0)
                  * on (${l.of('instance', ...ID.deployment)})
                    ${m('hypha_serve_deployment_autoscaling')}
                )
              * on (${l.of('instance', 'ray_cluster', 'app')})
                ${m('hypha_serve_app_bioengine_proxy')}
            )
          * on (${l.of('instance', 'ray_cluster', 'app')}) group_right ()
            max without (state) (${state}{state="registered"})
          ${registrationGuards(l).replace(/\n/g, '\n          ')}
        `),
      },
      {
        record: R.deregistersAtZeroBridged,
        comment: 'The warning\'s fact per app, over the exporter replicas and bridged.',
        expr: bridge(c, R.deregistersAtZero, ID.app),
      },
      alert(c, 'HyphaServeAppWillDeregisterAtZero', {
        comment:
          'A warning before incident 1a, not a page: the app is registered now, its registrant is BioEngine\'s ' +
          'ProxyDeployment, and a deployment of it may idle at zero, which deregisters the service until someone acts. ' +
          'Silent for min_replicas >= 1 and for Serve apps whose registrant is unknown.',
        expr: `${R.deregistersAtZeroBridged} == 1\n`,
        annotations: {
          summary: 'BioEngine app will lose its Hypha service when it idles to zero replicas.',
          description: prose(`
            Ray Serve app {{ $labels.app }} on Ray cluster {{ $labels.ray_cluster }} is registered on Hypha server
            {{ $labels.hypha }}{{ $d := ${deregisterQuery(c)} | sortByLabel "deployment" }}{{ with $d }} as {{ . | first | label "service" }}{{ end }}
            through BioEngine's ProxyDeployment, and its deployment(s)
            {{ range $i, $x := $d }}{{ if $i }}, {{ end }}{{ $x.Labels.deployment }}{{ else }}(unknown){{ end }}
            autoscale with min_replicas 0. When such a deployment idles to zero replicas (after its downscale delay), the
            proxy deregisters the service (BioEngine 0.13.0 to 0.16.1, proxy_deployment.py check_health) and registers it
            again only once a replica runs, which only a call through the missing service would start: callers then get
            "Service not found" (HyphaServeAppRunningNotRegistered, cause missing_scaled_to_zero). Set min_replicas to at
            least 1 for it; no BioEngine release registers an app at zero replicas.
          `),
        },
      }),
    ],
  };
}

/** The warning's one query: the app's deployments at min_replicas 0, each with the app's expected service id. */
function deregisterQuery(c: MixinConfig): string {
  const l = labels(c);
  const names = [...c.topology_labels, 'job', 'ray_cluster', 'app'];
  const sel = (series: string, extra: string[]) => `${series}{${[...names, ...extra].map((n) => `${n}=%q`).join(',')}}`;
  const expr = `max by (deployment, service) ((${sel(m('hypha_serve_deployment_min_replicas'), [])} == 0) ` +
    `* on (${l.of('instance', 'ray_cluster', 'app')}) group_left (service) ${sel(m('hypha_serve_app_expected_service_info'), ['hypha'])})`;
  const args = [...names, ...names, 'hypha'].map((n) => `$labels.${n}`).join(' ');
  return `printf "${expr}" ${args} | query`;
}

/** The uncertain wait and the alert's own for:, added (what the page text says it waited). */
function formatTotal(wait: string, forDuration: string): string {
  const ms = (parseDuration(wait) ?? 0) + (parseDuration(forDuration) ?? 0);
  return ms % 60_000 === 0 ? `${ms / 60_000}m` : `${ms / 1000}s`;
}


/* istanbul ignore file */
// The status page's browser script, served as static/status.js.
//
// It is written as one self-contained function so that the server sends its
// source text (Function.prototype.toString) as a static file: the page then
// runs under a CSP with script-src 'self' and no inline script. Inside the
// function only globals and type-only imports may be used; any runtime import
// would be undefined in the browser.
//
// The server program (../../../tsconfig.json) compiles this file, but it has no
// DOM typings, so that server code cannot use the DOM by accident: the DOM
// types come from ./dom, which are `any` there. The tsconfig.json in this
// folder checks the script against the real DOM and the API types.
//
// Every upstream string reaches the DOM through textContent, createTextNode,
// dataset or title: never through innerHTML or any other HTML parser.

import type {
  AppV1, ClusterV1, DeploymentV1, ProblemV1, SourceV1, StatusV1, TransitionV1, WatchedServiceV1,
} from '../model';
import type { HTMLElement, HTMLInputElement, HTMLTableCellElement, Node, Window } from './dom';

export function statusPageClient(win: Window): void {
  const doc = win.document;
  const params = new URLSearchParams(win.location.search);
  const refreshParam = Number(params.get('refresh') ?? '5');
  const refreshSeconds = Number.isFinite(refreshParam) && refreshParam >= 0 ? Math.max(refreshParam, refreshParam === 0 ? 0 : 1) : 5;

  const byId = <T extends HTMLElement>(id: string): T => {
    const e = doc.getElementById(id);
    if (!e) throw new Error(`status page: #${id} missing`);
    return e as T;
  };
  const filterInput = byId<HTMLInputElement>('filter');
  const onlyProblems = byId<HTMLInputElement>('only-problems');
  const autoRefresh = byId<HTMLInputElement>('auto-refresh');
  const summaryEl = byId<HTMLElement>('summary');
  const refreshStateEl = byId<HTMLElement>('refresh-state');
  const sectionBody = (id: string): HTMLElement => {
    const b = byId<HTMLElement>(id).querySelector('.body') as HTMLElement | null;
    if (!b) throw new Error(`status page: #${id} .body missing`);
    return b;
  };

  filterInput.value = params.get('filter') ?? '';
  onlyProblems.checked = params.get('problems') === '1';
  autoRefresh.checked = refreshSeconds > 0;

  /** Server clock minus browser clock, seconds: relative times follow the exporter's clock. */
  let clockOffset = 0;
  let lastOkAt: number | undefined;
  let refreshes = 0;
  let timer: number | undefined;

  // ------------------------------------------------------------------ DOM helpers

  type Child = Node | string | null | undefined | false;
  function el(tag: string, cls?: string, ...children: Child[]): HTMLElement {
    const e = doc.createElement(tag);
    if (cls) e.className = cls;
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      e.appendChild(typeof c === 'string' ? doc.createTextNode(c) : c);
    }
    return e;
  }
  /** A cell whose content sits in one wrapper, so the phone layout can put its label beside it. */
  function td(label: string, ...children: Child[]): HTMLElement {
    const cell = el('td', undefined, el('div', 'v', ...children));
    cell.dataset.label = label;
    return cell;
  }
  function addTo(cell: HTMLElement, child: Node): void {
    (cell.querySelector('.v') ?? cell).appendChild(child);
  }
  function badge(text: string, kind: string): HTMLElement {
    return el('span', `badge ${kind}`, text);
  }
  function mono(text: string): HTMLElement {
    return el('span', 'mono', text);
  }
  function clear(node: HTMLElement): void {
    while (node.firstChild) node.removeChild(node.firstChild);
  }
  function table(headers: string[], rows: HTMLElement[], empty: string): HTMLElement {
    if (rows.length === 0) return el('p', 'empty', empty);
    const head = el('tr');
    for (const h of headers) head.appendChild(el('th', undefined, h));
    const body = el('tbody');
    for (const r of rows) body.appendChild(r);
    return el('table', undefined, el('thead', undefined, head), body);
  }
  /** A row the filter can hide: its search text and severity live in data attributes. */
  function row(sev: string, search: Array<string | number | undefined | null>, ...cells: HTMLElement[]): HTMLElement {
    const r = el('tr', `sev-${sev}`, ...cells);
    r.dataset.sev = sev;
    r.dataset.search = search.filter((x) => x !== undefined && x !== null && x !== '').join(' ').toLowerCase();
    return r;
  }

  // ------------------------------------------------------------------ time

  const serverNow = (): number => Date.now() / 1000 + clockOffset;
  const pad = (n: number): string => String(n).padStart(2, '0');
  function fmtAbs(ts: number, full: boolean): string {
    const d = new Date(ts * 1000);
    const time = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
    const date = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
    const today = new Date(serverNow() * 1000);
    const sameDay = today.getUTCFullYear() === d.getUTCFullYear() && today.getUTCMonth() === d.getUTCMonth() && today.getUTCDate() === d.getUTCDate();
    return full || !sameDay ? `${date} ${time} UTC` : `${time} UTC`;
  }
  function fmtSpan(sec: number): string {
    const s = Math.round(sec);
    if (s < 60) return `${s} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
    if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
    return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
  }
  function fmtRel(ts: number): string {
    const d = serverNow() - ts;
    if (Math.abs(d) < 1) return 'just now';
    return d > 0 ? `${fmtSpan(d)} ago` : `in ${fmtSpan(-d)}`;
  }
  function fmtDuration(sec: number | undefined): string {
    if (sec === undefined) return '—';
    return sec < 1 ? `${Math.round(sec * 1000)} ms` : `${sec.toFixed(2)} s`;
  }
  /** Relative and absolute together; the relative part is kept current by tick(). */
  function timeEl(ts: number | undefined): HTMLElement {
    if (ts === undefined) return el('span', 'muted', '—');
    const rel = el('span', 'rel', fmtRel(ts));
    const abs = el('span', 'abs', ` (${fmtAbs(ts, false)})`);
    const t = el('span', 'time', rel, abs);
    t.dataset.ts = String(ts);
    t.title = fmtAbs(ts, true);
    return t;
  }
  function tick(): void {
    for (const t of Array.from(doc.querySelectorAll('.time[data-ts]')) as HTMLElement[]) {
      const rel = t.querySelector('.rel') as HTMLElement | null;
      if (rel) rel.textContent = fmtRel(Number(t.dataset.ts));
    }
    if (lastOkAt !== undefined && !refreshStateEl.classList.contains('failed')) {
      refreshStateEl.textContent = `updated ${fmtRel(lastOkAt)}${autoRefresh.checked && refreshSeconds > 0 ? ` · every ${refreshSeconds} s` : ' · paused'}`;
    }
  }

  // ------------------------------------------------------------------ sections

  function renderSummary(s: StatusV1): void {
    clear(summaryEl);
    const sum = s.summary;
    summaryEl.appendChild(sum.problems === 0
      ? badge('no problems', 'ok')
      : badge(`${sum.problems} problem${sum.problems === 1 ? '' : 's'}`, sum.critical > 0 ? 'critical' : 'warning'));
    summaryEl.appendChild(doc.createTextNode(` · ${sum.apps} app${sum.apps === 1 ? '' : 's'} · sources ${sum.sources_up} up, ${sum.sources_down} down`));
    if (!s.exporter.ready) summaryEl.appendChild(el('span', 'muted', ' · first sample in progress'));
    summaryEl.appendChild(el('span', 'muted', ` · data of `));
    summaryEl.appendChild(timeEl(s.generated_at));
  }

  function renderProblems(s: StatusV1): void {
    const body = sectionBody('problems');
    clear(body);
    if (s.problems.length === 0) {
      body.appendChild(el('p', 'empty', 'Nothing the exporter sees is wrong.'));
      return;
    }
    const list = el('ul', 'problems');
    for (const p of s.problems) list.appendChild(problemItem(p));
    body.appendChild(list);
  }
  function problemItem(p: ProblemV1): HTMLElement {
    const li = el('li', undefined, badge(p.severity, p.severity), ' ', el('strong', undefined, p.subject), ' ', el('span', undefined, p.text));
    li.dataset.sev = p.severity;
    li.dataset.search = [p.kind, p.subject, p.text, p.severity].join(' ').toLowerCase();
    return li;
  }

  function deploymentItem(d: DeploymentV1): HTMLElement {
    const sev = ['HEALTHY', 'UPSCALING', 'DOWNSCALING'].includes(d.status) ? 'ok'
      : d.status === 'UPDATING' ? 'warning'
        : ['UNHEALTHY', 'DEPLOY_FAILED'].includes(d.status) ? 'critical' : 'unknown';
    const counts = `running ${d.running}/${d.target ?? '?'}`;
    const bounds = d.min !== undefined || d.max !== undefined ? ` · min ${d.min ?? '?'} max ${d.max ?? '?'}` : '';
    const others = Object.entries(d.replicas).filter(([k, v]) => k !== 'RUNNING' && v > 0).map(([k, v]) => `${k.toLowerCase()} ${v}`).join(', ');
    const li = el('li', undefined,
      el('strong', undefined, d.name), ' ', badge(d.status, sev),
      ' ', el('span', undefined, counts + bounds),
      others ? el('span', 'why', ` (${others})`) : null,
      d.scaled_to_zero ? ' ' : null, d.scaled_to_zero ? badge('scaled to zero', 'info') : null,
      d.autoscaling ? null : el('span', 'why', ' · fixed'),
    );
    if (d.status_trigger) li.title = `trigger: ${d.status_trigger}`;
    return li;
  }

  function renderApps(s: StatusV1): void {
    const body = sectionBody('apps');
    clear(body);
    const reg = s.sections.registration;
    const headers = ['Cluster', 'App', 'Serve status', 'Deployments'];
    if (reg) headers.push('Hypha service', 'Registration', 'Missing since', "Worker's view");
    const rows: HTMLElement[] = [];
    const span = headers.length - 2;
    for (const c of s.clusters.filter((x: ClusterV1) => !x.up)) {
      const src = s.sources.find((x) => x.source === 'ray' && x.target === c.cluster);
      const cell = td('Serve status', badge('unknown', 'critical'), ` Ray source down: apps unknown${src?.last_error ? ` (${src.last_error})` : ''}`);
      (cell as HTMLTableCellElement).colSpan = span;
      rows.push(row('critical', [c.cluster, 'down', 'unknown', src?.last_error], td('Cluster', c.cluster), td('App', el('span', 'muted', '—')), cell));
    }
    for (const a of s.apps) rows.push(appRow(a, reg));
    if (!reg) body.appendChild(el('p', 'why', 'Hypha registration is not configured on this exporter: registration columns are hidden.'));
    body.appendChild(table(headers, rows, 'No Serve apps.'));
  }

  function appRow(a: AppV1, reg: boolean): HTMLElement {
    // Serve's own colour: a RUNNING app missing from Hypha keeps a green badge in a red row.
    const serveSev = a.status === 'RUNNING' ? 'ok'
      : ['DEPLOY_FAILED', 'UNHEALTHY'].includes(a.status) ? 'critical'
        : ['DEPLOYING', 'NOT_STARTED', 'DELETING'].includes(a.status) ? 'warning' : 'unknown';
    const status = td('Serve status', badge(a.status, serveSev));
    const depProblems = a.problems.filter((p) => p.startsWith('deployment '));
    if (depProblems.length > 0) addTo(status, el('div', 'why', depProblems.join('; ')));
    if (a.message) {
      const det = el('details', undefined, el('summary', undefined, a.message_truncated ? 'message (tail)' : 'message'), el('pre', undefined, a.message));
      addTo(status, det);
    }
    const deps = el('ul', 'deps');
    for (const d of a.deployments) deps.appendChild(deploymentItem(d));
    const appCell = td('App', el('strong', undefined, a.app));
    if (a.route_prefix) addTo(appCell, el('div', 'why mono', a.route_prefix));
    const cells = [td('Cluster', a.cluster), appCell, status, td('Deployments', a.deployments.length ? deps : el('span', 'muted', 'none yet'))];
    const search: Array<string | undefined> = [a.cluster, a.app, a.status, a.severity, ...a.problems, a.message.slice(-500)];
    for (const d of a.deployments) search.push(d.name, d.status, d.scaled_to_zero ? 'scaled to zero' : undefined);
    if (reg) {
      const r = a.registration;
      const w = a.worker_view;
      if (r) {
        const sev = r.state === 'registered' ? (r.client_id_mismatch ? 'warning' : 'ok')
          : r.state.startsWith('missing') ? 'critical' : r.state === 'not_running' ? 'warning' : 'unknown';
        const regCell = td('Registration', badge(r.state, sev), el('div', 'why', r.cause));
        if (r.client_id) addTo(regCell, el('div', 'why', 'client ', mono(r.client_id), r.client_id_mismatch ? ' (not the expected client id)' : ''));
        const gate = r.bioengine_gate;
        if (gate) {
          const version = gate.version !== undefined ? `BioEngine ${gate.version}` : 'worker version unknown';
          const from = gate.source === 'evidence' ? `seen doing so; ${version}` : version;
          addTo(regCell, el('div', 'why', 'gate ', mono(gate.gate), ` (${from})`));
          search.push(gate.gate, gate.version);
        }
        // Which server: with several Hypha servers the same service id can be expected on either.
        const service = r.hypha === undefined
          ? td('Hypha service', mono(r.expected_service_id))
          : td('Hypha service', mono(r.expected_service_id), el('div', 'why', 'on ', mono(r.hypha)));
        cells.push(service, regCell, td('Missing since', timeEl(r.missing_since)));
        search.push(r.expected_service_id, r.state, r.cause, r.client_id, r.hypha);
      } else {
        cells.push(td('Hypha service', el('span', 'muted', '—')), td('Registration', el('span', 'muted', 'not expected in Hypha')),
          td('Missing since', el('span', 'muted', '—')));
      }
      if (w) {
        const reported = w.service_registered === undefined ? 'does not say' : w.service_registered ? 'says registered' : 'says not registered';
        cells.push(td("Worker's view", el('div', undefined, mono(w.worker), ' ', badge(w.worker_up ? 'up' : 'down', w.worker_up ? 'ok' : 'critical')),
          el('div', 'why', `app ${w.app_status ?? 'not reported'} · ${reported}`)));
        search.push(w.worker, w.app_status);
      } else {
        cells.push(td("Worker's view", el('span', 'muted', '—')));
      }
    }
    return row(a.severity, search, ...cells);
  }

  function renderSources(s: StatusV1): void {
    const body = sectionBody('sources');
    clear(body);
    const rows = s.sources.map((x: SourceV1) => {
      const errs = Object.entries(x.errors).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`).join(', ');
      const errCell = td('Last error');
      if (x.last_error) addTo(errCell, el('div', 'mono', x.last_error));
      if (x.hint) addTo(errCell, el('div', 'why', x.hint));
      if (x.last_error_at !== undefined) addTo(errCell, timeEl(x.last_error_at));
      if (!x.last_error) addTo(errCell, el('span', 'muted', 'none'));
      if (x.credential?.problem) addTo(errCell, el('div', 'why', `token file ${x.credential.file}: ${x.credential.problem} (the last token read is kept)`));
      const state = x.up ? 'up' : x.pending ? 'starting' : 'down';
      return row(x.up ? 'ok' : x.pending ? 'unknown' : 'critical', [x.source, x.target, state, x.last_error, x.hint],
        td('Source', x.source), td('Target', x.target), td('State', badge(state, x.up ? 'ok' : x.pending ? 'unknown' : 'critical')),
        td('Last success (age)', timeEl(x.last_success_at)), td('Duration', fmtDuration(x.last_duration_seconds)), errCell,
        td('Errors', x.errors_total === 0 ? '0' : `${x.errors_total} (${errs})`));
    });
    body.appendChild(table(['Source', 'Target', 'State', 'Last success (age)', 'Duration', 'Last error', 'Errors'], rows, 'No sources configured.'));
    const proxies: HTMLElement[] = [];
    for (const c of s.clusters) {
      for (const p of c.proxies) {
        const sev = p.ready === false ? (p.head ? 'critical' : 'warning') : p.status !== 'HEALTHY' ? 'warning' : 'ok';
        proxies.push(row(sev, [c.cluster, p.node_ip, p.node_id, p.status, p.head ? 'head' : ''],
          td('Cluster', c.cluster), td('Node', mono(p.node_ip || p.node_id)), td('Head', p.head ? 'yes' : 'no'),
          td('Controller status', badge(p.status, p.status === 'HEALTHY' ? 'ok' : 'warning')),
          td('Ready (/-/healthz)', p.ready === null ? el('span', 'muted', 'not probed') : badge(p.ready ? 'ready' : 'not ready', p.ready ? 'ok' : sev),
            p.ready_detail ? el('div', 'why mono', p.ready_detail) : null)));
      }
    }
    if (proxies.length > 0) {
      // Secondary: filtered like the rest, not counted in the section heading.
      body.appendChild(el('div', 'secondary', el('h3', undefined, 'Serve proxies'),
        table(['Cluster', 'Node', 'Head', 'Controller status', 'Ready (/-/healthz)'], proxies, '')));
    }
  }

  function renderServices(s: StatusV1): void {
    const body = sectionBody('services');
    clear(body);
    if (!s.sections.watched_services) {
      body.appendChild(el('p', 'empty', 'No watched services configured.'));
      return;
    }
    const rows = s.watched_services.map((w: WatchedServiceV1) => {
      const providers = w.providers === null ? el('div', 'muted', 'listing failed') : badge(`${w.providers} live`, w.providers === 0 ? 'critical' : 'ok');
      const ids = el('ul', 'plain');
      for (const id of w.provider_client_ids) ids.appendChild(el('li', undefined, mono(id)));
      const cached = el('ul', 'plain');
      for (const c of w.cached) {
        cached.appendChild(el('li', undefined, el('strong', undefined, c.holder), ' ',
          c.client_id === null ? el('span', 'muted', 'none') : mono(c.client_id), ' ',
          c.stale === null ? badge('unknown', 'unknown') : c.stale ? badge('stale', 'critical') : badge('current', 'ok'),
          c.stale_since !== undefined ? el('span', 'why', ' since ') : null, c.stale_since !== undefined ? timeEl(c.stale_since) : null,
          c.error ? el('div', 'why', c.error) : null));
      }
      // The BioEngine workers that hold the service by default, with the version and how each recovers.
      if (w.witness_self_healing === true) cached.appendChild(el('li', undefined, badge('self-healing witness', 'warning')));
      for (const h of w.worker_holders ?? []) {
        cached.appendChild(el('li', undefined, el('span', 'why', 'worker '), mono(h.holder), ' ',
          el('span', 'why', h.version === null ? 'version unknown ' : `BioEngine ${h.version} `),
          badge(h.recovery.replace('_', ' '), h.recovery === 'self_healing' ? 'ok' : h.recovery === 'stays_stale' ? 'critical' : 'unknown')));
      }
      const probes = el('ul', 'plain');
      for (const p of w.probes) {
        probes.appendChild(el('li', undefined, el('strong', undefined, p.via), ' ',
          badge(p.outcome ?? (p.success ? 'ok' : 'failed'), p.success ? 'ok' : 'critical'),
          ` ${fmtDuration(p.latency_seconds)}`, p.method ? el('span', 'why', ` ${p.method}()`) : null,
          p.at !== undefined ? ' ' : null, p.at !== undefined ? timeEl(p.at) : null,
          p.target ? el('div', 'why mono', p.target) : null, p.error ? el('div', 'why', p.error) : null));
      }
      const status = td('Service', el('strong', undefined, mono(w.service)));
      if (w.problems.length > 0) addTo(status, el('div', 'why', w.problems.join('; ')));
      return row(w.severity, [w.service, w.severity, ...w.problems, ...w.provider_client_ids, w.resolved_client_id,
        ...w.cached.map((c) => `${c.holder} ${c.client_id ?? ''} ${c.stale ? 'stale' : ''}`),
        ...(w.worker_holders ?? []).map((h) => `${h.holder} ${h.version ?? ''} ${h.recovery}`)],
        status, td('Providers', providers, ids),
        td('Resolved client id', w.resolved_client_id === null ? el('span', 'muted', 'unresolved') : mono(w.resolved_client_id)),
        td('Cached client id per holder', cached.childNodes.length ? cached : el('span', 'muted', 'none')), td('Last change', timeEl(w.last_change_at)),
        td('Probe latency (cached vs fresh)', w.probes.length ? probes : el('span', 'muted', 'no probe yet')));
    });
    body.appendChild(table(
      ['Service', 'Providers', 'Resolved client id', 'Cached client id per holder', 'Last change', 'Probe latency (cached vs fresh)'],
      rows, 'No watched services configured.'));
  }

  function renderTransitions(s: StatusV1): void {
    const body = sectionBody('transitions');
    clear(body);
    const kindText: Record<string, string> = {
      source: 'source', app_status: 'app status', app_added: 'app added', app_removed: 'app removed',
      scaled_to_zero: 'scale to zero', registration: 'registration', client_id: 'client id', providers: 'providers',
    };
    const rows = s.transitions.map((t: TransitionV1) => row(t.severity, [t.kind, kindText[t.kind], t.subject, t.from, t.to, t.detail],
      td('When', timeEl(t.at)), td('Kind', kindText[t.kind] ?? t.kind), td('Subject', el('strong', undefined, t.subject)),
      td('Change', t.from === null ? el('span', 'muted', '(none)') : el('span', undefined, t.from), ' → ',
        t.to === null ? el('span', 'muted', '(gone)') : badge(t.to, t.severity)),
      td('Detail', t.detail ? el('span', 'why', t.detail) : el('span', 'muted', ''))));
    body.appendChild(el('p', 'why', `Last ${s.transitions_capacity} state changes seen since the exporter started, newest first.`));
    body.appendChild(table(['When', 'Kind', 'Subject', 'Change', 'Detail'], rows, 'No state change seen yet.'));
  }

  // ------------------------------------------------------------------ filter

  function applyFilter(): void {
    const terms: string[] = filterInput.value.toLowerCase().split(/\s+/).filter((x: string) => x !== '');
    const problemsOnly = onlyProblems.checked;
    for (const id of ['problems', 'apps', 'sources', 'services', 'transitions']) {
      const section = byId<HTMLElement>(id);
      const items = Array.from(section.querySelectorAll('[data-search]')) as HTMLElement[];
      let shown = 0;
      let counted = 0;
      for (const it of items) {
        const hay = it.dataset.search ?? '';
        const ok = terms.every((t) => hay.includes(t)) && (!problemsOnly || (it.dataset.sev !== undefined && it.dataset.sev !== 'ok'));
        it.hidden = !ok;
        if (it.closest('.secondary')) continue;
        counted++;
        if (ok) shown++;
      }
      const h2 = section.querySelector('h2');
      if (!h2) continue;
      let count = h2.querySelector('.count') as HTMLElement | null;
      if (!count) {
        count = el('span', 'count');
        h2.appendChild(count);
      }
      count.textContent = counted === 0 ? '' : shown === counted ? ` (${counted})` : ` (${shown} of ${counted} shown)`;
    }
    // The filter survives a reload and can be shared as a link.
    const next = new URLSearchParams(win.location.search);
    if (filterInput.value) next.set('filter', filterInput.value);
    else next.delete('filter');
    if (problemsOnly) next.set('problems', '1');
    else next.delete('problems');
    const q = next.toString();
    win.history.replaceState(null, '', q ? `?${q}` : win.location.pathname);
  }

  // ------------------------------------------------------------------ refresh

  function render(s: StatusV1): void {
    renderSummary(s);
    renderProblems(s);
    renderApps(s);
    renderSources(s);
    renderServices(s);
    renderTransitions(s);
    applyFilter();
  }

  function schedule(): void {
    if (timer !== undefined) win.clearTimeout(timer);
    timer = undefined;
    if (autoRefresh.checked && refreshSeconds > 0) timer = win.setTimeout(() => void load(), refreshSeconds * 1000);
  }

  async function load(): Promise<void> {
    try {
      const res = await win.fetch('api/v1/status', { cache: 'no-store', headers: { accept: 'application/json' } });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const data = (await res.json()) as StatusV1;
      if (data.version !== 1) throw new Error(`unsupported status API version ${String(data.version)}`);
      clockOffset = data.generated_at - Date.now() / 1000;
      lastOkAt = data.generated_at;
      render(data);
      refreshes++;
      doc.body.dataset.refreshes = String(refreshes);
      refreshStateEl.classList.remove('failed');
    } catch (e) {
      refreshStateEl.classList.add('failed');
      refreshStateEl.textContent = `refresh failed (${e instanceof Error ? e.message : String(e)})`
        + (lastOkAt !== undefined ? `; showing data of ${fmtRel(lastOkAt)}` : '');
    } finally {
      tick();
      schedule();
    }
  }

  filterInput.addEventListener('input', applyFilter);
  onlyProblems.addEventListener('change', applyFilter);
  autoRefresh.addEventListener('change', () => {
    schedule();
    tick();
  });
  win.setInterval(tick, 1000);
  void load();
}

/** The served script: the function's compiled source, called on the page's window. */
export function statusPageScript(): string {
  return `"use strict";\n(${statusPageClient.toString()})(window);\n`;
}

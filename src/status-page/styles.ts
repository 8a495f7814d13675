// Stylesheet of the status page, served as static/status.css (the CSP allows no inline style).
// Below 760px wide the tables turn into one card per row, labelled from data-label.

export const STATUS_CSS = `
:root { --fg:#1b1f24; --muted:#5b6470; --bg:#fff; --line:#d8dde3; --head:#f3f5f7;
  --crit:#b42318; --crit-bg:#fdecea; --warn:#8a5a00; --warn-bg:#fff4d6; --ok:#1a7f37; --ok-bg:#e7f5ea;
  --unk:#4b5563; --unk-bg:#eef0f2; --info:#0b5cad; --info-bg:#e6f0fb; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header { position: sticky; top: 0; z-index: 1; background: var(--head); border-bottom: 1px solid var(--line); padding: .6rem 1rem; }
h1 { font-size: 1.15rem; margin: 0 0 .25rem; }
h1 .version { font-weight: normal; color: var(--muted); font-size: .9rem; }
h2 { font-size: 1.05rem; margin: 1.2rem 0 .4rem; }
main { padding: 0 1rem 1rem; }
footer { padding: .8rem 1rem; color: var(--muted); border-top: 1px solid var(--line); }
a { color: var(--info); }
.summary { margin: 0 0 .4rem; }
.controls { display: flex; flex-wrap: wrap; gap: .4rem .8rem; align-items: center; }
.controls input[type=search] { flex: 1 1 16rem; max-width: 28rem; padding: .35rem .5rem; font: inherit; border: 1px solid var(--line); border-radius: 4px; }
.controls .check { white-space: nowrap; }
.refresh-state { color: var(--muted); font-size: .85rem; }
.refresh-state.failed { color: var(--crit); font-weight: 600; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: .35rem .5rem; border-bottom: 1px solid var(--line); }
th { background: var(--head); font-weight: 600; white-space: nowrap; }
tr.sev-critical > td:first-child { box-shadow: inset 4px 0 0 var(--crit); }
tr.sev-warning > td:first-child { box-shadow: inset 4px 0 0 var(--warn); }
tr.sev-unknown > td:first-child { box-shadow: inset 4px 0 0 var(--unk); }
.badge { display: inline-block; padding: 0 .4rem; border-radius: 3px; font-size: .8rem; font-weight: 600; white-space: nowrap; }
.badge.critical { color: var(--crit); background: var(--crit-bg); }
.badge.warning { color: var(--warn); background: var(--warn-bg); }
.badge.ok { color: var(--ok); background: var(--ok-bg); }
.badge.unknown { color: var(--unk); background: var(--unk-bg); }
.badge.info { color: var(--info); background: var(--info-bg); }
.muted { color: var(--muted); }
.mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: .85rem; overflow-wrap: anywhere; }
.time { white-space: nowrap; }
.time .abs { color: var(--muted); font-size: .8rem; }
ul.deps, ul.plain { list-style: none; margin: 0; padding: 0; }
ul.deps li { margin: 0 0 .2rem; }
ul.problems li { margin: 0 0 .25rem; }
ul.problems { margin: 0; padding-left: 0; list-style: none; }
.why { color: var(--muted); font-size: .85rem; }
details summary { cursor: pointer; color: var(--muted); }
details pre { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 20rem; overflow: auto; \
background: var(--head); padding: .4rem; margin: .3rem 0 0; font-size: .8rem; }
.empty { color: var(--muted); font-style: italic; }
.count { color: var(--muted); font-weight: normal; font-size: .85rem; }
[hidden] { display: none !important; }
@media (max-width: 760px) {
  header { position: static; }
  main { padding: 0 .5rem .5rem; }
  table, thead, tbody, tr, td { display: block; width: 100%; }
  thead { display: none; }
  tr { border: 1px solid var(--line); border-radius: 6px; margin: 0 0 .6rem; padding: .2rem 0; }
  tr.sev-critical { border-left: 5px solid var(--crit); }
  tr.sev-warning { border-left: 5px solid var(--warn); }
  tr.sev-unknown { border-left: 5px solid var(--unk); }
  tr > td:first-child { box-shadow: none !important; }
  td { border: 0; padding: .15rem .6rem; }
  td[data-label] { display: grid; grid-template-columns: 6.5rem minmax(0, 1fr); column-gap: .5rem; }
  td[data-label]::before { content: attr(data-label); font-size: .75rem; color: var(--muted); padding-top: .1rem; overflow-wrap: anywhere; }
  td[data-label] > .v { min-width: 0; overflow-wrap: anywhere; }
  td.empty-cell { display: none; }
}
`;

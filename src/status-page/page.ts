// The status page shell. It holds no data at all: static/status.js fetches
// api/v1/status and builds the DOM with textContent, so no upstream string is
// ever parsed as HTML. Relative URLs keep the page working behind a path prefix.

/** Sent with the page: only this exporter's own script and stylesheet may run or apply. */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** A plain dot, so browsers do not ask for a missing /favicon.ico. */
export const FAVICON_SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="8" r="7" fill="#0b5cad"/></svg>\n';

export function statusPageHtml(version: string): string {
  const v = version.replace(/[^0-9A-Za-z.+-]/g, '');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>hypha-serve-exporter status</title>
<link rel="stylesheet" href="static/status.css">
<link rel="icon" href="static/favicon.svg" type="image/svg+xml">
</head>
<body>
<header>
<h1>hypha-serve-exporter <span class="version">${v}</span></h1>
<p id="summary" class="summary" aria-live="polite">Loading status…</p>
<div class="controls">
<label for="filter">Filter</label>
<input id="filter" type="search" placeholder="app, cluster, status, service id…" autocomplete="off" spellcheck="false">
<label class="check"><input id="only-problems" type="checkbox"> problems only</label>
<label class="check"><input id="auto-refresh" type="checkbox" checked> auto-refresh</label>
<span id="refresh-state" class="refresh-state"></span>
</div>
</header>
<main>
<section id="problems" aria-labelledby="h-problems"><h2 id="h-problems">Problems</h2><div class="body"></div></section>
<section id="apps" aria-labelledby="h-apps"><h2 id="h-apps">Apps</h2><div class="body"></div></section>
<section id="sources" aria-labelledby="h-sources"><h2 id="h-sources">Sources</h2><div class="body"></div></section>
<section id="services" aria-labelledby="h-services"><h2 id="h-services">Watched services</h2><div class="body"></div></section>
<section id="transitions" aria-labelledby="h-transitions"><h2 id="h-transitions">Recent transitions</h2><div class="body"></div></section>
</main>
<noscript><p>This page is drawn by the exporter's own script (static/status.js). \
The same data: <a href="api/v1/status">api/v1/status</a> (JSON) and <a href="metrics">metrics</a>.</p></noscript>
<footer>
<a href="metrics">metrics</a> · <a href="api/v1/status">api/v1/status</a> · <a href="-/healthy">-/healthy</a> · <a href="-/ready">-/ready</a>
</footer>
<script src="static/status.js"></script>
</body>
</html>
`;
}

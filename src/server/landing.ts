/** The minimal landing page (the operator status page replaces it later). */
export function landingPage(version: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>hypha-serve-exporter</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:50em}</style></head>
<body><h1>hypha-serve-exporter</h1>
<p>Version ${version.replace(/[^0-9A-Za-z.+-]/g, '')}. Prometheus exporter for Ray Serve applications and their Hypha service registrations.</p>
<ul>
<li><a href="metrics">Metrics</a></li>
<li><a href="-/healthy">Health</a></li>
<li><a href="-/ready">Readiness</a></li>
</ul></body></html>
`;
}

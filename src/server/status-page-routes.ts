import { Router } from 'express';
import { VERSION } from '../util/version';
import { statusPageScript } from '../status-page/browser/client';
import { FAVICON_SVG, PAGE_CSP, statusPageHtml } from '../status-page/page';
import { STATUS_CSS } from '../status-page/styles';

/** GET / (the operator status page) and its two static files. */
export function statusPageRouter(): Router {
  const r = Router();
  // Built once: none of the three depends on data.
  const html = statusPageHtml(VERSION);
  const script = statusPageScript();
  const css = STATUS_CSS;
  r.get('/', (_req, res) => {
    res.set({
      'Content-Security-Policy': PAGE_CSP,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      'Cache-Control': 'no-store',
    }).type('html').send(html);
  });
  r.get('/static/status.js', (_req, res) => {
    res.set({ 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-cache' }).type('application/javascript; charset=utf-8').send(script);
  });
  r.get('/static/status.css', (_req, res) => {
    res.set({ 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-cache' }).type('text/css; charset=utf-8').send(css);
  });
  r.get('/static/favicon.svg', (_req, res) => {
    res.set({ 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'max-age=86400' }).type('image/svg+xml').send(FAVICON_SVG);
  });
  return r;
}

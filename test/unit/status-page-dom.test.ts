// The status page's browser script is typed against the DOM by its own tsconfig, while the
// server program has no DOM typings: a DOM name in server code is a compile error there.
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import express from 'express';
import ts from 'typescript';
import { statusPageScript } from '../../src/status-page/browser/client';
import { statusPageRouter } from '../../src/server/status-page-routes';

const ROOT = path.resolve(__dirname, '../..');
const BROWSER_DIR = path.join(ROOT, 'src/status-page/browser');

function parsedConfig(file: string): ts.ParsedCommandLine {
  const parsed = ts.getParsedCommandLineOfConfigFile(file, {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n')); },
  });
  if (!parsed) throw new Error(`cannot read ${file}`);
  return parsed;
}

/** Diagnostics of `source` compiled as `file` (which need not exist) with the options of `config`. */
function probe(config: string, file: string, source: string): string[] {
  const { options } = parsedConfig(config);
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, lang, ...rest) => (path.resolve(name) === file ? ts.createSourceFile(name, source, lang) : getSourceFile(name, lang, ...rest));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => path.resolve(name) === file || fileExists(name);
  const program = ts.createProgram([file], { ...options, noEmit: true }, host);
  return ts.getPreEmitDiagnostics(program, program.getSourceFile(file)).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

describe('status page browser typings', () => {
  it('the browser script type-checks against the DOM', () => {
    const parsed = parsedConfig(path.join(BROWSER_DIR, 'tsconfig.json'));
    expect(parsed.fileNames.map((f) => path.relative(BROWSER_DIR, f)).sort()).toEqual(['client.ts', 'dom.ts']);
    const program = ts.createProgram(parsed.fileNames, parsed.options);
    const diags = ts.getPreEmitDiagnostics(program).map((d) => `${d.file ? path.relative(ROOT, d.file.fileName) : ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    expect(diags).toEqual([]);
  }, 60_000);

  it('./dom gives the real DOM types under the browser tsconfig, so a misuse is caught', () => {
    const diags = probe(path.join(BROWSER_DIR, 'tsconfig.json'), path.join(BROWSER_DIR, 'probe.ts'), [
      "import type { HTMLElement, Window } from './dom';",
      'export function f(w: Window, e: HTMLElement): number { return e.hidden ? w.document.titel : 0; }',
    ].join('\n'));
    expect(diags.join('\n')).toMatch(/Property 'titel' does not exist/);
  }, 60_000);

  it('the server program has no DOM typings', () => {
    const diags = probe(path.join(ROOT, 'tsconfig.json'), path.join(ROOT, 'src/probe.ts'), [
      'export const e: HTMLElement | undefined = undefined;',
      'export const t = document.title;',
    ].join('\n'));
    expect(diags.join('\n')).toMatch(/Cannot find name 'HTMLElement'/);
    expect(diags.join('\n')).toMatch(/Cannot find name 'document'/);
  }, 60_000);

  it('only the browser script imports the DOM stand-ins', () => {
    const offenders: string[] = [];
    const walk = (dir: string): void => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.name.endsWith('.ts') && path.dirname(p) !== BROWSER_DIR && /from '[^']*browser\/dom'/.test(fs.readFileSync(p, 'utf8'))) offenders.push(path.relative(ROOT, p));
      }
    };
    walk(path.join(ROOT, 'src'));
    expect(offenders).toEqual([]);
  });

  it('the server, compiled without the DOM typings, serves the script as plain JavaScript', async () => {
    const script = statusPageScript();
    expect(script.startsWith('"use strict";\n(function statusPageClient(win) {')).toBe(true);
    expect(() => new Function(script)).not.toThrow();
    const server = express().use(statusPageRouter()).listen(0, '127.0.0.1');
    try {
      await new Promise((resolve) => server.once('listening', resolve));
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/static/status.js`);
      expect(res.headers.get('content-type')).toBe('application/javascript; charset=utf-8');
      expect(await res.text()).toBe(script);
    } finally {
      server.close();
    }
  });
});

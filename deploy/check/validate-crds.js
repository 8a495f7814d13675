#!/usr/bin/env node
// Validates ServiceMonitor and PrometheusRule objects in rendered manifests against the Prometheus Operator
// CRD schemas, made strict: kubernetes-validate skips custom resources, and a CRD schema as published
// accepts unknown fields (a typo such as `intervall:` or `fro:` would pass), so every object schema
// that lists its properties gets additionalProperties: false (unless it preserves unknown fields), and
// Go's inline (?i) regex flag, which ECMAScript lacks, is rewritten into case-insensitive classes.
//   node deploy/check/validate-crds.js CRD_DIR MANIFEST.yaml...
// Exit 0 when every custom resource is valid (and at least one was checked), 1 otherwise.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const YAML = require('yaml');
const Ajv = require('ajv').default;

function goRegexToEcma(pattern) {
  const at = pattern.indexOf('(?i)');
  if (at < 0) return pattern;
  let out = pattern.slice(0, at);
  let inClass = false;
  const body = pattern.slice(at + 4);
  for (let i = 0; i < body.length; i++) {
    // A further (?i) (the AlertmanagerConfig CRD's month names have one per group) adds nothing: the rest is
    // case-insensitive already.
    if (body.startsWith('(?i)', i)) { i += 3; continue; }
    const c = body[i];
    if (c === '\\') { out += c + (body[i + 1] ?? ''); i++; continue; }
    if (c === '[') inClass = true;
    if (c === ']') inClass = false;
    if (/[a-zA-Z]/.test(c)) {
      const pair = c.toLowerCase() + c.toUpperCase();
      out += inClass ? pair : `[${pair}]`;
    } else out += c;
  }
  return out;
}

function strictify(schema) {
  if (Array.isArray(schema)) return schema.map(strictify);
  if (schema === null || typeof schema !== 'object') return schema;
  const out = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'pattern' && typeof v === 'string') out[k] = goRegexToEcma(v);
    else if (k === 'properties') out[k] = Object.fromEntries(Object.entries(v).map(([p, s]) => [p, strictify(s)]));
    else out[k] = strictify(v);
  }
  if (out.properties && out.additionalProperties === undefined && !out['x-kubernetes-preserve-unknown-fields']) {
    out.additionalProperties = false;
  }
  return out;
}

function loadCrdValidators(dir) {
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
  const validators = new Map();
  for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.yaml'))) {
    const crd = YAML.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
    if (crd?.kind !== 'CustomResourceDefinition') continue;
    for (const v of crd.spec.versions) {
      const schema = strictify(v.schema.openAPIV3Schema);
      // apiVersion/kind are checked by the lookup key; metadata by Kubernetes itself.
      validators.set(`${crd.spec.group}/${v.name}/${crd.spec.names.kind}`, ajv.compile(schema));
    }
  }
  return validators;
}

function main(argv) {
  const [crdDir, ...files] = argv;
  if (!crdDir || files.length === 0) {
    process.stderr.write('usage: validate-crds.js CRD_DIR MANIFEST.yaml...\n');
    return 2;
  }
  const validators = loadCrdValidators(crdDir);
  let checked = 0;
  let bad = 0;
  for (const file of files) {
    const docs = YAML.parseAllDocuments(fs.readFileSync(file, 'utf8'));
    for (const doc of docs) {
      if (doc.errors.length) {
        process.stdout.write(`${file}: YAML error: ${doc.errors[0].message}\n`);
        bad++;
        continue;
      }
      const obj = doc.toJS();
      if (!obj || typeof obj !== 'object' || !String(obj.apiVersion ?? '').includes('monitoring.coreos.com')) continue;
      const key = `${obj.apiVersion}/${obj.kind}`;
      const validate = validators.get(key);
      const name = `${file}: ${obj.kind}/${obj.metadata?.name ?? '?'}`;
      if (!validate) {
        process.stdout.write(`${name}: no CRD schema for ${key}\n`);
        bad++;
        continue;
      }
      checked++;
      if (!validate(obj)) {
        bad++;
        for (const e of validate.errors.slice(0, 10)) {
          const extra = e.keyword === 'additionalProperties' ? ` (${e.params.additionalProperty})` : '';
          process.stdout.write(`${name}: ${e.instancePath || '/'} ${e.message}${extra}\n`);
        }
      } else {
        process.stdout.write(`${name}: valid against the strict ${key} CRD schema\n`);
      }
    }
  }
  if (checked === 0 && bad === 0) {
    process.stdout.write('no ServiceMonitor or PrometheusRule found\n');
    return 1;
  }
  return bad === 0 ? 0 : 1;
}

process.exit(main(process.argv.slice(2)));

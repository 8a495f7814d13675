// Durations everywhere (config, flags, web config, rules mixin config) follow Prometheus's grammar
// (model.ParseDuration of prometheus/common): issue 38 item 6.
import fs from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { FlagError, parseCheckFlags, parseFlags } from '../../src/cli/flags';
import { configJsonSchema } from '../../src/config/json-schema';
import { ConfigError, loadConfig } from '../../src/config/load';
import { duration, durationOrZero } from '../../src/config/validators';
import { loadWebConfig } from '../../src/server/web-config';
import { DURATION_PATTERN, durationProblem, formatDuration, MAX_DURATION_MS, parseDuration } from '../../src/util/duration';
import { loadMixinConfig, scaleDurations } from '../../mixin/config';
import { tmpDir } from '../helpers/tmp';

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;
const ROOT = path.resolve(__dirname, '..', '..');

describe('parseDuration: Prometheus grammar', () => {
  it.each([
    ['0', 0], ['0s', 0], ['0ms', 0], ['500ms', 500], ['15s', 15 * S], ['1m', M], ['1h30m', H + 30 * M], ['1m30s', 90 * S],
    ['2d', 2 * D], ['1w', 7 * D], ['1y', 365 * D], ['1y2w3d4h5m6s7ms', 365 * D + 14 * D + 3 * D + 4 * H + 5 * M + 6 * S + 7],
    ['90s', 90 * S], ['1m1ms', M + 1], ['01s', S], ['1h0m0s', H], [`${MAX_DURATION_MS}ms`, MAX_DURATION_MS], ['292y', 292 * 365 * D],
  ])('accepts %j = %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
    expect(DURATION_PATTERN.test(text)).toBe(true);
    expect(durationProblem(text)).toBeUndefined();
  });

  it.each([
    '', '1.5s', '0.5s', '.5s', '30s1m', '1m1m', '1ms1s', '5 minutes', '15 seconds', ' 15s', '15s ', '1 s', '-1s', '+1s', '10', 's', 'ms',
    '1us', '1ns', '1µs', '1M', '1H', '1m30', 'soon', '1e3s', '5toString', '1constructor', '1s-1s', `${MAX_DURATION_MS + 1}ms`, '300y', '99999999999999999999999s',
  ])('rejects %j', (text) => {
    expect(parseDuration(text)).toBeUndefined();
    expect(durationProblem(text)).toEqual(expect.any(String));
  });

  it('says why a text is not a duration, and what to write instead where that is plain', () => {
    expect(durationProblem('1.5s')).toMatch(/^"1\.5s" is not a duration: fractions are not allowed, use a smaller unit \(write 1s500ms\); whole numbers/);
    expect(durationProblem('0.5s')).toContain('(write 500ms)');
    expect(durationProblem('30s1m')).toMatch(/units must go from largest to smallest \(write 1m30s\)/);
    expect(durationProblem('1m1m')).toMatch(/a unit appears twice \(write 2m\)/);
    expect(durationProblem('5 minutes')).toMatch(/unknown unit "minutes": use m \(write 5m\)/);
    expect(durationProblem('15s ')).toMatch(/spaces in it \(write 15s\)/);
    expect(durationProblem('-1s')).toMatch(/cannot be negative/);
    expect(durationProblem('10')).toMatch(/the number 10 has no unit/);
    expect(durationProblem('250us')).toMatch(/unknown unit "us": the smallest unit is ms/);
    expect(durationProblem('1M')).toMatch(/no months/);
    expect(durationProblem('5toString')).toMatch(/unknown unit "toString"; whole/);
    expect(durationProblem('soon')).toMatch(/"soon" is not a duration: it is not a number followed by a unit/);
    expect(durationProblem('')).toMatch(/^empty/);
    expect(durationProblem('300y')).toMatch(/"300y" is out of range: the longest duration is 292y/);
    // Every message names the grammar.
    for (const t of ['1.5s', '30s1m', 'soon', '']) expect(durationProblem(t)).toContain('units largest first, each at most once: y w d h m s ms');
  });

  it('formatDuration writes what Prometheus writes, and parseDuration reads it back', () => {
    expect(formatDuration(0)).toBe('0s');
    expect(formatDuration(500)).toBe('500ms');
    expect(formatDuration(1500)).toBe('1s500ms');
    expect(formatDuration(90 * S)).toBe('1m30s');
    expect(formatDuration(5 * M)).toBe('5m');
    expect(formatDuration(2 * D)).toBe('2d');
    expect(formatDuration(7 * D)).toBe('1w');
    expect(formatDuration(366 * D)).toBe('1y1d');
    expect(() => formatDuration(-1)).toThrow(RangeError);
    expect(() => formatDuration(Number.NaN)).toThrow(RangeError);
    let seed = 7;
    const next = () => (seed = (seed * 48271) % 2147483647);
    const samples = [0, 1, 999, 1000, 59_999, M, H - 1, D, 7 * D, 365 * D, MAX_DURATION_MS];
    for (let i = 0; i < 500; i++) samples.push(next() * (i % 3 === 0 ? 1 : i % 3 === 1 ? 1000 : 4096));
    for (const ms of samples) {
      const text = formatDuration(ms);
      expect(DURATION_PATTERN.test(text)).toBe(true);
      expect(parseDuration(text)).toBe(ms);
    }
  });
});

describe('config durations', () => {
  const t = tmpDir();
  afterAll(() => t.cleanup());

  function configError(text: string): ConfigError {
    const file = t.write('c.yml', text);
    try {
      loadConfig(file, {});
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      const ce = e as ConfigError;
      // One line naming the file, the line and the field.
      expect(ce.message.split('\n')).toHaveLength(1);
      expect(ce.message.startsWith(`${file}:${ce.line}:`)).toBe(true);
      expect(ce.message).toContain(`${ce.field}: ${ce.problem}`);
      return ce;
    }
    throw new Error('the config loaded');
  }

  it('global: {interval: 1.5s} fails naming the file, the line and the field', () => {
    const ce = configError('global: {interval: 1.5s}\n');
    expect(ce.file).toMatch(/c\.yml$/);
    expect(ce.line).toBe(1);
    expect(ce.field).toBe('global.interval');
    expect(ce.problem).toMatch(/"1\.5s" is not a duration: fractions are not allowed.*\(write 1s500ms\)/);
    expect(ce.message).toMatch(/c\.yml:1:\d+: global\.interval: "1\.5s" is not a duration/);
  });

  it('units in the wrong order fail the same way', () => {
    const ce = configError('global:\n  interval: 15s\n  timeout: 30s1m\n');
    expect(ce.line).toBe(3);
    expect(ce.field).toBe('global.timeout');
    expect(ce.problem).toMatch(/"30s1m" is not a duration: units must go from largest to smallest \(write 1m30s\)/);
  });

  it.each([
    ['ray_clusters:\n  - name: a\n    dashboard_url: http://h:1\n    interval: 1m1m\n', 4, 'ray_clusters[0].interval', /a unit appears twice/],
    ['global:\n  interval: 15 seconds\n', 2, 'global.interval', /unknown unit "seconds": use s \(write 15s\)/],
    ['global:\n  interval: 30\n', 2, 'global.interval', /must be a duration: the number 30 has no unit/],
    ['global:\n  interval: -1s\n', 2, 'global.interval', /cannot be negative/],
    ['global:\n  interval: 0s\n', 2, 'global.interval', /must be longer than 0/],
    ['global:\n  interval: "0"\n', 2, 'global.interval', /must be longer than 0/],
    ['global:\n  interval: ""\n', 2, 'global.interval', /empty/],
  ])('refuses %j', (text, line, field, re) => {
    const ce = configError(text);
    expect(ce.line).toBe(line);
    expect(ce.field).toBe(field);
    expect(ce.problem).toMatch(re);
  });

  it('loads 1h30m, 1w and 1y', () => {
    const file = t.write('ok.yml', 'global:\n  interval: 1w\n  timeout: 1h30m\nray_clusters:\n  - name: a\n    dashboard_url: http://h:1\n  - name: b\n    dashboard_url: http://h:2\n    interval: 1y\n    timeout: 500ms\n');
    const cfg = loadConfig(file, {});
    expect(cfg.rayClusters[0]).toMatchObject({ intervalMs: 7 * D, timeoutMs: H + 30 * M });
    expect(cfg.rayClusters[1]).toMatchObject({ intervalMs: 365 * D, timeoutMs: 500 });
  });

  it('a wait that may be none takes 0s and a bare 0; a wait that must be positive does not', () => {
    expect(durationOrZero.parse('0')).toBe('0');
    expect(durationOrZero.parse('0s')).toBe('0s');
    expect(durationOrZero.safeParse('1.5s').success).toBe(false);
    expect(duration.safeParse('0').success).toBe(false);
    expect(duration.parse('1w2d')).toBe('1w2d');
  });

  it('the published JSON Schema pattern is the grammar', () => {
    const patterns = new Set<string>();
    JSON.stringify(configJsonSchema(), (k, v: unknown) => {
      if (k === 'pattern' && typeof v === 'string' && v.includes('ms')) patterns.add(v);
      return v;
    });
    expect([...patterns]).toEqual([DURATION_PATTERN.source]);
  });
});

describe('flag durations', () => {
  it('--web.header-timeout takes 1m30s and refuses 1.5s, saying why', () => {
    expect(parseFlags(['--web.header-timeout=1m30s']).webHeaderTimeoutMs).toBe(90 * S);
    expect(() => parseFlags(['--web.header-timeout=1.5s'])).toThrow(FlagError);
    expect(() => parseFlags(['--web.header-timeout=1.5s'])).toThrow(/^--web\.header-timeout: "1\.5s" is not a duration: fractions are not allowed.*\(write 1s500ms\)/);
    expect(() => parseFlags(['--web.header-timeout=30s1m'])).toThrow(/--web\.header-timeout: "30s1m" is not a duration: units must go from largest to smallest/);
    expect(() => parseFlags(['--web.header-timeout=0'])).toThrow(/--web\.header-timeout: "0" is not a positive duration/);
  });

  it('check --timeout takes the same grammar', () => {
    expect(parseCheckFlags(['--timeout=1m30s']).timeoutMs).toBe(90 * S);
    expect(parseCheckFlags(['--timeout=1w']).timeoutMs).toBe(7 * D);
    expect(() => parseCheckFlags(['--timeout=2.5m'])).toThrow(/^--timeout: "2\.5m" is not a duration: .*\(write 2m30s\)/);
    expect(() => parseCheckFlags(['--timeout=0s'])).toThrow(/--timeout: "0s" is not a positive duration such as 30s or 2m/);
  });
});

describe('web config durations', () => {
  const t = tmpDir();
  afterAll(() => t.cleanup());

  it('rate_limit.interval takes the grammar (and 0), and refuses 1.5s naming file, line and field', () => {
    expect(loadWebConfig(t.write('a.yml', 'rate_limit:\n  interval: 1m30s\n  burst: 2\n')).rateLimit).toEqual({ intervalMs: 90 * S, burst: 2 });
    expect(loadWebConfig(t.write('b.yml', 'rate_limit:\n  interval: 0\n')).rateLimit).toBeUndefined();
    expect(loadWebConfig(t.write('c.yml', 'rate_limit:\n  interval: "0"\n')).rateLimit).toBeUndefined();
    const file = t.write('d.yml', 'rate_limit:\n  interval: 1.5s\n  burst: 2\n');
    expect(() => loadWebConfig(file)).toThrow(ConfigError);
    expect(() => loadWebConfig(file)).toThrow(/d\.yml:2:\d+: rate_limit\.interval: "1\.5s" is not a duration: fractions are not allowed.*\(0: no limit\)$/);
  });
});

describe('rules mixin config durations', () => {
  const t = tmpDir();
  afterAll(() => t.cleanup());
  const over = (o: unknown) => t.write('mixin.yml', stringify(o));

  it('takes 1w, 1y and a bare 0 (written back as 0s), and refuses 1.5m and 30s1m naming the key', () => {
    const c = loadMixinConfig(ROOT, over({ bridge: '1w', alerts: { HyphaServeSourceDown: { severity: 'critical', for: '1y' }, HyphaServeSourceStale: { severity: 'critical', for: '0' } } }));
    expect(c.bridge).toBe('1w');
    expect(c.alerts.HyphaServeSourceDown.for).toBe('1y');
    expect(c.alerts.HyphaServeSourceStale.for).toBe('0s');
    expect(() => loadMixinConfig(ROOT, over({ alerts: { HyphaServeSourceDown: { severity: 'critical', for: '1.5m' } } })))
      .toThrow(/mixin\.yml: alerts\.HyphaServeSourceDown\.for: "1\.5m" is not a duration: .*\(write 1m30s\)/);
    expect(() => loadMixinConfig(ROOT, over({ bridge: '30s1m' }))).toThrow(/mixin\.yml: bridge: "30s1m" is not a duration: units must go from largest/);
    expect(() => loadMixinConfig(ROOT, over({ bridge: '' }))).toThrow(/bridge: empty/);
  });

  it('scaleDurations reads w and y and writes what the grammar reads', () => {
    const c = loadMixinConfig(ROOT, over({ bridge: '1w', alerts: { HyphaServeSourceDown: { severity: 'critical', for: '1y' } } }));
    const s = scaleDurations(c, 7, '5s');
    expect(s.bridge).toBe('1d');
    expect(s.alerts.HyphaServeSourceDown.for).toBe('7w3d3h25m43s');
    for (const d of [s.bridge, ...Object.values(s.alerts).flatMap((a) => [a.for, a.keep_firing_for ?? '0s'])]) expect(parseDuration(d)).toBeDefined();
  });

  it('the shipped rules/config/mixin.yml parses under the grammar', () => {
    expect(fs.existsSync(path.join(ROOT, 'rules/config/mixin.yml'))).toBe(true);
    const c = loadMixinConfig(ROOT);
    for (const d of [c.bridge, ...Object.values(c.alerts).map((a) => a.for)]) expect(parseDuration(d)).toBeDefined();
  });
});

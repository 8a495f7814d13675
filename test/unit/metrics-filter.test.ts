// --metric-allowlist / --metric-denylist: parsed as kube-state-metrics does (comma-
// separated, each regex anchored to the whole family name) and applied by the renderer.
import { FlagError, parseFlags } from '../../src/cli/flags';
import { familyEnabled } from '../../src/metrics/renderer';

describe('metric family allow/deny lists', () => {
  it('parses comma-separated anchored regexes', () => {
    const f = parseFlags(['--metric-allowlist=hypha_serve_app_.*, hypha_serve_source_up', '--metric-denylist', 'hypha_serve_app_info']);
    expect(f.metricAllowlist?.map(String)).toEqual(['/^(?:hypha_serve_app_.*)$/', '/^(?:hypha_serve_source_up)$/']);
    const filter = { allow: f.metricAllowlist, deny: f.metricDenylist };
    expect(familyEnabled('hypha_serve_app_status', filter)).toBe(true);
    expect(familyEnabled('hypha_serve_source_up', filter)).toBe(true);
    expect(familyEnabled('hypha_serve_app_info', filter)).toBe(false);
    expect(familyEnabled('hypha_serve_source_up_extra', filter)).toBe(false);
    expect(familyEnabled('x_hypha_serve_app_status', filter)).toBe(false);
    expect(parseFlags([]).metricAllowlist).toBeUndefined();
    expect(familyEnabled('anything', {})).toBe(true);
  });

  it('rejects an invalid regex with a flag error', () => {
    expect(() => parseFlags(['--metric-denylist=hypha_serve_(app'])).toThrow(FlagError);
    expect(() => parseFlags(['--metric-denylist=hypha_serve_(app'])).toThrow(/--metric-denylist: "hypha_serve_\(app" is not a valid regular expression/);
  });
});

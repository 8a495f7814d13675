// The comparator behind test/integration/dashboards-live.test.ts's docs check: it reads docs/metrics.md's
// table by column name and reports every disagreement with a served exposition, in both directions.
import fs from 'node:fs';
import path from 'node:path';
import { compareWithDocs, documentedFamilies } from '../helpers/documented-families';
import { parseFamilies } from '../helpers/exposition';

const DOC = [
  'Some prose | with a pipe.',
  '',
  '| labels | metric | type | meaning |',
  '|---|---|---|---|',
  '| `a`, `b` | `x_up` | gauge | up |',
  '| | `x_errors_total` | counter | errors |',
  '| op | `x_duration_seconds` | histogram | latency |',
  '| — | `x_quiet` | gauge | no series in this scenario |',
  '',
].join('\n');

const SERVED = [
  '# HELP x_up up', '# TYPE x_up gauge', 'x_up{a="1",b="2"} 1',
  '# HELP x_errors_total errors', '# TYPE x_errors_total counter', 'x_errors_total 3',
  '# HELP x_duration_seconds latency', '# TYPE x_duration_seconds histogram',
  'x_duration_seconds_bucket{op="r",le="0.1"} 1', 'x_duration_seconds_bucket{op="r",le="+Inf"} 2',
  'x_duration_seconds_sum{op="r"} 0.3', 'x_duration_seconds_count{op="r"} 2',
  '# HELP x_quiet nothing yet', '# TYPE x_quiet gauge',
  '',
].join('\n');

describe('served families against the documented table', () => {
  it('reads the table by column name, whatever the column order; an empty or dash labels cell is no labels', () => {
    const d = documentedFamilies(DOC);
    expect([...d.keys()]).toEqual(['x_up', 'x_errors_total', 'x_duration_seconds', 'x_quiet']);
    expect(d.get('x_up')).toEqual({ name: 'x_up', type: 'gauge', labels: ['a', 'b'] });
    expect(d.get('x_errors_total')?.labels).toEqual([]);
    expect(d.get('x_quiet')?.labels).toEqual([]);
  });

  it('agreement: no problems (histogram buckets carry le, a family without series only its headers)', () => {
    expect(compareWithDocs(parseFamilies(SERVED), documentedFamilies(DOC))).toEqual([]);
  });

  it('reports a label the doc lacks, a missing label, another type, an undocumented family and a documented one not served', () => {
    const served = SERVED
      .replace('x_up{a="1",b="2"} 1', 'x_up{a="1",b="2",c="3"} 1')
      .replace('x_duration_seconds_sum{op="r"}', 'x_duration_seconds_sum')
      .replace('# TYPE x_errors_total counter', '# TYPE x_errors_total gauge')
      .replace('# HELP x_quiet nothing yet\n# TYPE x_quiet gauge\n', '# HELP x_new new\n# TYPE x_new gauge\nx_new 1\n');
    expect(compareWithDocs(parseFamilies(served), documentedFamilies(DOC))).toEqual([
      'x_up: served with labels {a,b,c}, documented {a,b}',
      'x_errors_total: served as gauge, documented as counter',
      'x_duration_seconds_sum: served with labels {}, documented {op}',
      'x_new: served (gauge) but not documented',
      'x_quiet: documented (gauge) but not served (no HELP/TYPE header)',
    ]);
  });

  it('a documented label may be absent from a series only where the caller says so', () => {
    const served = SERVED.replace('x_up{a="1",b="2"} 1', 'x_up{a="1"} 1');
    expect(compareWithDocs(parseFamilies(served), documentedFamilies(DOC))).toEqual(['x_up: served with labels {a}, documented {a,b}']);
    expect(compareWithDocs(parseFamilies(served), documentedFamilies(DOC), { x_up: ['b'] })).toEqual([]);
    // The exception never admits a label the doc lacks.
    const extra = SERVED.replace('x_up{a="1",b="2"} 1', 'x_up{a="1",c="3"} 1');
    expect(compareWithDocs(parseFamilies(extra), documentedFamilies(DOC), { x_up: ['b'] })).toEqual(['x_up: served with labels {a,c}, documented {a}']);
  });

  it('a sample outside its family\'s block is a parse error, not a silently misfiled series', () => {
    expect(() => parseFamilies('# HELP x_up up\n# TYPE x_up gauge\nx_other 1\n')).toThrow(/outside its family/);
  });

  it('docs/metrics.md parses: every family once, with a known type', () => {
    const d = documentedFamilies(fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'metrics.md'), 'utf8'));
    expect(d.size).toBeGreaterThan(50);
    expect(d.get('hypha_serve_source_up')).toEqual({ name: 'hypha_serve_source_up', type: 'gauge', labels: ['hypha', 'ray_cluster', 'service', 'source'] });
  });
});

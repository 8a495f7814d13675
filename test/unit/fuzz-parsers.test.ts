// The fixed-seed slice of the fuzz campaign (test/fuzz/targets.ts): every parser of outside input, a
// few hundred generated and mutated inputs each, in seconds. `npm run fuzz` runs the large campaign.
import { promtoolSample, removeScratch, runCampaign } from '../fuzz/targets';

describe('fuzz (fixed seed)', () => {
  afterAll(removeScratch);

  it.each(runCampaign(300, 26).map((r) => [r.name, r] as const))('%s: no throw but the clear error, every property holds', (_name, r) => {
    expect(r.failure).toBeUndefined();
    expect(r.runs).toBe(300);
  });

  it('a sample of what the writer emits from arbitrary label values passes promtool check metrics', () => {
    const r = promtoolSample(200, 26);
    expect(r.output).not.toMatch(/error/i);
    expect(r.ok).toBe(true);
  });
});

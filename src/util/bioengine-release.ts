import { comparePep440, parsePep440, Pep440Version } from './pep440';

// The BioEngine releases that fixed the two incidents this exporter pages on, as far as upstream's
// history pins them (docs/hypha-registration.md, "Which BioEngine releases"):
//  - the proxy's registration gate (an app idle at zero stays registered): 0.16.2 (48deffca) still
//    has the 0.16.1 gate; commit 1a189562, whose pyproject.toml reads 0.16.15, has `_is_serviceable`
//    and the maintenance-task registration, so every release after 0.16.15 has it;
//  - the worker's re-resolving artifact-manager proxy (a re-registration costs at most one failed
//    call): absent in 0.16.2, present in 0.16.30 (4ae5715c, `_version.py` and manager.py stored at
//    the same commit).
// A release between the two ends of a fix is not pinned either way and counts as unknown: a wrong
// "old" would page a cold deploy at once with a false proof, a wrong "fixed" only delays a real page
// by the cause's wait.

/** The release bounds of one fix: the last release proven without it, the first proven with it. */
export interface Fix {
  lastWithout: string;
  firstWith: string;
}

export const GATE_FIX: Fix = { lastWithout: '0.16.2', firstWith: '0.16.16' };
export const ARTIFACT_MANAGER_FIX: Fix = { lastWithout: '0.16.2', firstWith: '0.16.30' };

/** The first release with both fixes: what an upgrade should reach. */
export const FIRST_RELEASE_WITH_FIXES = ARTIFACT_MANAGER_FIX.firstWith;
/** The last release with neither fix. */
export const LAST_RELEASE_BEFORE_FIXES = GATE_FIX.lastWithout;

const parsed = new Map<string, Pep440Version>();
function bound(v: string): Pep440Version {
  let p = parsed.get(v);
  if (!p) {
    p = parsePep440(v);
    if (!p) throw new Error(`not a PEP 440 version: ${v}`);
    parsed.set(v, p);
  }
  return p;
}

/** Whether a release has the fix: true from firstWith, false up to lastWithout (dev builds of it included), else undefined. */
export function hasFix(fix: Fix, version: string | undefined): boolean | undefined {
  const v = version === undefined ? undefined : parsePep440(version);
  if (v === undefined) return undefined;
  if (comparePep440(v, bound(fix.firstWith)) >= 0) return true;
  if (comparePep440(v, bound(fix.lastWithout)) <= 0) return false;
  return undefined;
}

/** The gate a worker's reported version ships; undefined when the version does not tell. */
export function gateOfVersion(version: string | undefined): 'deregisters_at_zero' | 'serviceable_at_zero' | undefined {
  const fixed = hasFix(GATE_FIX, version);
  return fixed === undefined ? undefined : fixed ? 'serviceable_at_zero' : 'deregisters_at_zero';
}

/** Whether a worker of this release re-resolves a stale artifact-manager proxy by itself; undefined when unknown. */
export function reresolvesArtifactManager(version: string | undefined): boolean | undefined {
  return hasFix(ARTIFACT_MANAGER_FIX, version);
}

/**
 * Structural equality of plain snapshot data (objects, arrays, primitives). `skip` names a
 * top-level field left out: data another cache unit covers (an app's deployments).
 */
export function sameData(a: unknown, b: unknown, skip?: string): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) {
    return typeof a === 'number' && typeof b === 'number' && Number.isNaN(a) && Number.isNaN(b);
  }
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameData(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  // Maps, dates and class instances are not plain data: never assumed equal, so their unit re-renders.
  if (Object.getPrototypeOf(a) !== Object.prototype || Object.getPrototypeOf(b) !== Object.prototype) return false;
  // for-in rather than Object.keys(): no key arrays per compared object (tens of thousands per snapshot
  // at thousands of apps). With Object.prototype as the prototype, for-in visits exactly the own
  // enumerable string keys (Object.prototype has no enumerable properties).
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  let na = 0;
  for (const k in ra) {
    na++;
    if (k === skip) continue;
    if (!hasOwn.call(rb, k) || !sameData(ra[k], rb[k])) return false;
  }
  let nb = 0;
  for (const _ in rb) nb++;
  return na === nb;
}

const hasOwn = Object.prototype.hasOwnProperty;

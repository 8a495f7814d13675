// The DOM types the status page script names. Each is the DOM class's instance
// type where the program has the DOM typings (this folder's tsconfig.json) and
// `any` where it has not (the server program, which compiles the script only to
// serve its source text). The script takes every DOM type it names from here,
// because the server program has no global one; server code must not import these.

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the server program's fallback, see above
type DomClass<K extends string> = typeof globalThis extends Record<K, { prototype: infer T }> ? T : any;

export type Window = DomClass<'Window'>;
export type Node = DomClass<'Node'>;
export type HTMLElement = DomClass<'HTMLElement'>;
export type HTMLInputElement = DomClass<'HTMLInputElement'>;
export type HTMLTableCellElement = DomClass<'HTMLTableCellElement'>;

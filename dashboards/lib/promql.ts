// What the dashboard lint needs to know about one PromQL expression, read from the syntax tree
// of Prometheus' own lezer grammar rather than from regular expressions.
import { parser } from '@prometheus-io/lezer-promql';
import type { SyntaxNode } from '@lezer/common';

/**
 * Grafana's range variables, each replaced by a duration of the same length so that positions in
 * the parsed text are positions in the original (the lint reads the range text back from it).
 */
const SAME_LENGTH_DURATIONS: ReadonlyArray<readonly [string, string]> = [
  ['$__rate_interval', '999999999999999s'],
  ['$__interval', '9999999999s'],
  ['$__range', '9999999s'],
];

export interface Matcher {
  name: string;
  op: string;
  value: string;
}

export interface Selector {
  metric: string | undefined;
  matchers: Matcher[];
  /** Innermost enclosing function that takes this selector as a range vector, if any. */
  rangeFunction: string | undefined;
  /** The range as written, e.g. "$__rate_interval" or "5m", when the selector is a range vector. */
  range: string | undefined;
  text: string;
}

export interface RangeCall {
  fn: string;
  range: string;
}

export interface PromqlFacts {
  /** Parse errors, with the text around them. */
  errors: string[];
  selectors: Selector[];
  /** Every function call over a range vector, with its range as written. */
  rangeCalls: RangeCall[];
  /** Every label name written in the expression: in matchers and in by/without/on/ignoring/group_* lists. */
  labelNames: string[];
}

function unquote(literal: string): string {
  const q = literal[0];
  const body = literal.slice(1, -1);
  if (q === '`') return body;
  // Prometheus string escapes are Go's; for the \" and \\ used in dashboards JSON.parse agrees.
  if (q === '"') return JSON.parse(literal) as string;
  return JSON.parse(`"${body.replace(/\\'/g, "'").replace(/"/g, '\\"')}"`) as string;
}

function children(node: SyntaxNode): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  for (let c = node.firstChild; c; c = c.nextSibling) out.push(c);
  return out;
}

export function analysePromql(expr: string): PromqlFacts {
  let text = expr;
  for (const [v, d] of SAME_LENGTH_DURATIONS) text = text.split(v).join(d);
  const tree = parser.parse(text);
  const errors: string[] = [];
  const selectors: Selector[] = [];
  const rangeCalls: RangeCall[] = [];
  const labelNames: string[] = [];
  const original = (n: SyntaxNode) => expr.slice(n.from, n.to);

  tree.iterate({
    enter(ref) {
      if (ref.type.isError) {
        errors.push(`syntax error at ${ref.from}: …${expr.slice(Math.max(0, ref.from - 20), ref.from + 20)}…`);
        return;
      }
      if (ref.name === 'LabelName') labelNames.push(original(ref.node));
      if (ref.name !== 'VectorSelector') return;
      const node = ref.node;
      const metricNode = node.getChild('Identifier');
      const matchers: Matcher[] = [];
      const list = node.getChild('LabelMatchers');
      if (list) {
        for (const m of children(list)) {
          if (m.name !== 'UnquotedLabelMatcher' && m.name !== 'QuotedLabelMatcher') continue;
          const name = m.getChild('LabelName') ?? m.getChild('QuotedLabelName');
          const op = m.getChild('MatchOp');
          const value = m.getChild('StringLiteral');
          if (!name || !op || !value) continue;
          matchers.push({ name: original(name), op: original(op), value: unquote(original(value)) });
        }
      }
      let range: string | undefined;
      let rangeFunction: string | undefined;
      const parent = node.parent;
      if (parent?.name === 'MatrixSelector') {
        range = expr.slice(node.to, parent.to).trim().replace(/^\[|\]$/g, '').trim();
        // MatrixSelector → FunctionCallBody → FunctionCall
        const call = parent.parent?.name === 'FunctionCallBody' ? parent.parent.parent : null;
        const ident = call?.getChild('FunctionIdentifier');
        if (ident) rangeFunction = original(ident);
        if (rangeFunction) rangeCalls.push({ fn: rangeFunction, range });
      }
      selectors.push({ metric: metricNode ? original(metricNode) : undefined, matchers, rangeFunction, range, text: original(node) });
    },
  });
  return { errors, selectors, rangeCalls, labelNames };
}

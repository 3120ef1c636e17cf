/**
 * sql/plan/explain.ts — EXPLAIN: the plan tree as readable lines.
 *
 *   • project
 *   │ columns: a, b
 *   └── • scan
 *         table: t@t_pkey
 *         spans: /1 – /10]
 *
 * Spans print the key columns' expressions (parameters as $n), so the
 * output of a prepared statement does not depend on its arguments.
 */
import { assertNever } from '../../src/util/assert.js';
import type { PlanNode, SpanPlan } from './plan-node.js';
import { describeQueryNode } from './query-explain.js';

function spansText(s: SpanPlan): string {
  if (s.kind === 'points') return s.text.join(', ');
  return s.prefixText
    .map((prefix) => {
      if (s.lo === undefined && s.hi === undefined) return prefix === '' ? 'FULL SCAN' : prefix;
      const lo = s.lo === undefined ? `${prefix}` : `${prefix}/${s.lo.text}${s.lo.inclusive ? '' : ' (excl)'}`;
      const hi = s.hi === undefined ? `${prefix}/…` : `${prefix}/${s.hi.text}${s.hi.inclusive ? '' : ' (excl)'}`;
      return `${lo === '' ? '-' : lo} – ${hi}`;
    })
    .join(', ');
}

function describe(n: PlanNode): { name: string; attrs: string[]; children: PlanNode[] } {
  switch (n.kind) {
    case 'scan': {
      // A secondary-index scan that is not covering reads its rows through an index join.
      if (n.index?.join === true) {
        return { name: 'index join', attrs: [`table: ${n.table.desc.name}@${n.table.desc.primaryIndex.name}`], children: [{ ...n, index: { codec: n.index.codec, join: false } }] };
      }
      const indexName = n.index !== undefined ? n.index.codec.index.name : n.table.desc.primaryIndex.name;
      const attrs = [`table: ${n.table.desc.name}@${indexName}`, `spans: ${spansText(n.spans)}`];
      if (n.spans.kind === 'points') attrs.push(`lookup: ${n.spans.keys.length} point${n.spans.keys.length === 1 ? '' : 's'} (batched gets)`);
      if (n.reverse) attrs.push('direction: reverse');
      if (n.limit !== undefined) attrs.push('limit: pushed down');
      if (n.lock !== 'none') attrs.push('locking strength: for update');
      return { name: 'scan', attrs, children: [] };
    }
    case 'values':
      return { name: 'values', attrs: [`size: ${n.columns.length} column${n.columns.length === 1 ? '' : 's'}, ${n.rows.length} row${n.rows.length === 1 ? '' : 's'}`], children: [] };
    case 'filter':
      return { name: 'filter', attrs: [`filter: ${n.text}`], children: [n.input] };
    case 'sort':
      return { name: n.limit !== undefined ? 'top-k' : 'sort', attrs: [`order: ${n.keys.map((k) => k.text).join(', ')}`], children: [n.input] };
    case 'limit':
      return { name: 'limit', attrs: [n.limit !== undefined ? 'count: yes' : '', n.offset !== undefined ? 'offset: yes' : ''].filter((x) => x !== ''), children: [n.input] };
    case 'project':
      return { name: 'render', attrs: n.text.length > 0 ? [`columns: ${n.text.join(', ')}`] : [], children: [n.input] };
    case 'insert':
      return {
        name: n.upsert ? 'upsert' : 'insert',
        attrs: [`into: ${n.table.desc.name}`, ...(n.onConflict !== undefined ? [`on conflict: ${n.onConflict.action}`] : []), 'auto commit: when implicit'],
        children: [n.input],
      };
    case 'update':
      return { name: 'update', attrs: [`table: ${n.table.desc.name}`], children: [n.input] };
    case 'delete':
      return { name: 'delete', attrs: [`from: ${n.table.desc.name}`], children: [n.input] };
    case 'hash-join':
    case 'lookup-join':
    case 'aggregate':
    case 'distinct':
    case 'set-op':
    case 'subqueries':
    case 'recursive-cte':
    case 'working-table':
    case 'window':
    case 'apply':
    case 'project-set':
      return describeQueryNode(n);
    default:
      return assertNever(n);
  }
}

/** EXPLAIN lines of a plan tree. */
export function explainPlan(root: PlanNode): string[] {
  const out: string[] = [];
  const walk = (n: PlanNode, indent: string, first: boolean): void => {
    const d = describe(n);
    out.push(`${indent}${first ? '' : '└── '}• ${d.name}`);
    const inner = first ? indent : indent + '    ';
    const bar = d.children.length > 0 ? '│ ' : '  ';
    for (const a of d.attrs) out.push(`${inner}${bar}${a}`);
    for (const c of d.children) walk(c, inner, false);
  };
  walk(root, '', true);
  return out;
}

/**
 * sql/plan/query-explain.ts — EXPLAIN lines of the query nodes (query-nodes.ts).
 *
 * The join line names the algorithm the cost rule chose (hash join, cross join
 * for a nested loop without keys, lookup join into an index).
 */
import { assertNever } from '../../src/util/assert.js';
import type { PlanNode } from './plan-node.js';
import type { QueryNode } from './query-nodes.js';

export function describeQueryNode(n: QueryNode): { name: string; attrs: string[]; children: PlanNode[] } {
  switch (n.kind) {
    case 'hash-join': {
      const name = n.leftKeys.length > 0 ? 'hash join' : 'cross join';
      const attrs = [`type: ${n.type}`];
      if (n.leftKeys.length > 0) attrs.push(`equality: ${n.leftKeys.length} key${n.leftKeys.length === 1 ? '' : 's'}`);
      attrs.push(`on: ${n.text}`);
      return { name, attrs, children: [n.left, n.right] };
    }
    case 'lookup-join':
      return {
        name: 'lookup join',
        attrs: [`type: ${n.type}`, `table: ${n.scan.table.desc.name}@${n.scan.table.desc.primaryIndex.name}`, `on: ${n.text}`, ...(n.scan.lock !== 'none' ? ['locking strength: for update'] : [])],
        children: [n.left],
      };
    case 'aggregate':
      return { name: n.groupKeys.length > 0 ? 'group (hash)' : 'group (scalar)', attrs: [...(n.groupText.length > 0 ? [`group by: ${n.groupText.join(', ')}`] : []), ...(n.aggs.length > 0 ? [`aggregates: ${n.aggs.map((a) => a.text).join(', ')}`] : [])], children: [n.input] };
    case 'distinct':
      return { name: 'distinct', attrs: [n.on ? 'distinct on: yes' : `columns: ${n.keys.length}`], children: [n.input] };
    case 'set-op':
      return { name: `${n.op}${n.all ? ' all' : ''}`, attrs: [], children: [n.left, n.right] };
    case 'subqueries':
      return { name: 'subqueries', attrs: n.cells.map((c) => `${c.mode}: ${c.text}`), children: [n.input, ...n.cells.map((c) => c.plan)] };
    case 'recursive-cte':
      return { name: 'recursive cte', attrs: [`name: ${n.name}`, `iteration bound: ${n.maxIterations}`], children: [n.anchor, n.recursive] };
    case 'working-table':
      return { name: 'working table', attrs: [`cte: ${n.name}`], children: [] };
    case 'project-set':
      return { name: 'project set', attrs: [`functions: ${n.text.join(', ')}`], children: [n.input] };
    case 'apply':
      return n.mode === 'lateral' || n.mode === 'lateral-left' ? { name: 'apply (lateral join)', attrs: [`lateral: ${n.text}`], children: [n.input, n.plan] } : { name: 'apply (correlated subquery)', attrs: [`${n.mode}: ${n.text}`], children: [n.input, n.plan] };
    case 'window':
      return { name: 'window', attrs: [`window: ${n.text}`, `functions: ${n.funcs.map((f) => f.text).join(', ')}`], children: [n.input] };
    default:
      return assertNever(n);
  }
}

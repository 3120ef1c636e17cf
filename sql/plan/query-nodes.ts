/**
 * sql/plan/query-nodes.ts — plan nodes of the query breadth of issue 7
 * (joins, aggregation, DISTINCT, set operations, uncorrelated subqueries).
 *
 *   hash-join     left ─┐ build a hash table of the right input on the equi-join
 *                 right ┘ keys (or one bucket for a cross / non-equi join:
 *                         nested loop), probe with each left row
 *   lookup-join   left ──► batched primary-index gets on the right table, one per
 *                         distinct left key (cost rule: the join key covers the
 *                         right table's whole primary key and the right side reads
 *                         the whole table otherwise)
 *   aggregate     input ──► one row per group: [group keys…, aggregates…]
 *   distinct      input ──► first row per key (DISTINCT and DISTINCT ON)
 *   set-op        left, right ──► UNION / INTERSECT / EXCEPT [ALL]
 *   subqueries    runs each uncorrelated subquery once per execution, then its input
 *
 * Output row of a join = left row ++ right row (the right half all NULL for an
 * unmatched outer row, and the left half for RIGHT / FULL joins).
 * Every buffering operator charges its rows to the per-query memory budget
 * (exec/memory-budget.ts).
 *
 * Owned by issue 7 part 1 (queries). Part 2 extends LookupJoinNode to
 * secondary indexes (the `index` field is the primary index today).
 */
import type { TableEntry } from '../catalog/catalog.js';
import type { Datum } from '../sem/datum.js';
import type { EvalEnv, EvalFn, ScopeColumn } from '../sem/expr.js';
import type { SqlType } from '../types/type.js';
import type { PlanNode, ScanNode } from './plan-node.js';

export type JoinType = 'inner' | 'left' | 'right' | 'full' | 'cross' | 'semi' | 'anti';

export interface HashJoinNode {
  readonly kind: 'hash-join';
  readonly type: JoinType;
  readonly left: PlanNode;
  readonly right: PlanNode;
  /** Equi-join keys over the left row / the right row (empty: nested loop). */
  readonly leftKeys: readonly EvalFn[];
  readonly rightKeys: readonly EvalFn[];
  /** Types the key values are compared in (both sides cast to it). */
  readonly keyTypes: readonly SqlType[];
  /** Cast of a left / right key value into keyTypes[i] (identity when equal). */
  readonly leftCasts: readonly ((d: Exclude<Datum, null>) => Exclude<Datum, null>)[];
  readonly rightCasts: readonly ((d: Exclude<Datum, null>) => Exclude<Datum, null>)[];
  /** The rest of the ON condition, over left ++ right. */
  readonly on: EvalFn | undefined;
  readonly text: string;
  readonly leftWidth: number;
  readonly rightWidth: number;
  readonly columns: readonly ScopeColumn[];
}

export interface LookupJoinNode {
  readonly kind: 'lookup-join';
  readonly type: 'inner' | 'left';
  readonly left: PlanNode;
  /** The right table's scan (columns, decoded columns, lock); its spans are unused. */
  readonly scan: ScanNode;
  /** One per primary-key column of the right table, over the left row. */
  readonly leftKeys: readonly EvalFn[];
  /** Filter on the right row alone (pushed-down WHERE of the right side). */
  readonly rightFilter: EvalFn | undefined;
  /** The right side's projection over the scanned row. */
  readonly rightExprs: readonly EvalFn[];
  readonly on: EvalFn | undefined;
  readonly text: string;
  readonly leftWidth: number;
  readonly rightWidth: number;
  readonly columns: readonly ScopeColumn[];
}

export type AggName = 'count' | 'sum' | 'avg' | 'min' | 'max' | 'bool_and' | 'bool_or' | 'every' | 'string_agg' | 'array_agg' | 'jsonb_agg' | 'json_agg';

export interface AggSpec {
  readonly name: AggName;
  /** count(*) has no arguments. */
  readonly args: readonly EvalFn[];
  readonly argTypes: readonly SqlType[];
  readonly distinct: boolean;
  readonly filter: EvalFn | undefined;
  readonly resultType: SqlType;
  /** ORDER BY inside the call (string_agg / array_agg). */
  readonly order: readonly { fn: EvalFn; desc: boolean; nullsFirst: boolean; cmp: (a: Exclude<Datum, null>, b: Exclude<Datum, null>) => number }[];
  readonly text: string;
}

export interface AggregateNode {
  readonly kind: 'aggregate';
  readonly input: PlanNode;
  readonly groupKeys: readonly EvalFn[];
  readonly groupTypes: readonly SqlType[];
  readonly groupText: readonly string[];
  readonly aggs: readonly AggSpec[];
  readonly columns: readonly ScopeColumn[];
}

export interface DistinctNode {
  readonly kind: 'distinct';
  readonly input: PlanNode;
  /** Key expressions over the input row (all columns for DISTINCT). */
  readonly keys: readonly EvalFn[];
  readonly keyTypes: readonly SqlType[];
  readonly on: boolean;
  readonly columns: readonly ScopeColumn[];
}

export interface SetOpNode {
  readonly kind: 'set-op';
  readonly op: 'union' | 'intersect' | 'except';
  readonly all: boolean;
  readonly left: PlanNode;
  readonly right: PlanNode;
  readonly types: readonly SqlType[];
  readonly columns: readonly ScopeColumn[];
}

/** An uncorrelated subquery; its result is kept per execution (per EvalEnv). */
export interface SubqueryCell {
  readonly plan: PlanNode;
  readonly mode: 'scalar' | 'exists' | 'rows';
  readonly types: readonly SqlType[];
  readonly text: string;
  readonly results: WeakMap<EvalEnv, unknown>;
}

export interface SubqueriesNode {
  readonly kind: 'subqueries';
  readonly input: PlanNode;
  readonly cells: readonly SubqueryCell[];
  readonly columns: readonly ScopeColumn[];
}

/** WITH RECURSIVE: anchor rows, then the recursive term over the previous iteration's rows. */
export interface RecursiveCteNode {
  readonly kind: 'recursive-cte';
  readonly anchor: PlanNode;
  /** Reads the working table through `working`. */
  readonly recursive: PlanNode;
  readonly working: { rows: WeakMap<EvalEnv, Datum[][]> };
  readonly union: 'all' | 'distinct';
  readonly types: readonly SqlType[];
  readonly maxIterations: number;
  readonly name: string;
  readonly columns: readonly ScopeColumn[];
}

/** Rows of the current iteration of a recursive CTE. */
export interface WorkingTableNode {
  readonly kind: 'working-table';
  readonly working: { rows: WeakMap<EvalEnv, Datum[][]> };
  readonly name: string;
  readonly columns: readonly ScopeColumn[];
}

/** One window function call evaluated by a WindowNode. */
export interface WindowFuncSpec {
  readonly name: 'row_number' | 'rank' | 'dense_rank' | 'percent_rank' | 'cume_dist' | 'ntile' | 'lag' | 'lead' | 'first_value' | 'last_value' | 'nth_value' | 'aggregate';
  readonly args: readonly EvalFn[];
  /** For name 'aggregate': the aggregate (count/sum/avg/min/max/bool_and/bool_or). */
  readonly agg: AggSpec | undefined;
  readonly type: SqlType;
  readonly text: string;
}

/** One end of a window frame; `offset` for the `n PRECEDING` / `n FOLLOWING` kinds. */
export interface FrameBoundSpec {
  readonly kind: 'unbounded preceding' | 'unbounded following' | 'current row' | 'preceding' | 'following';
  readonly offset: EvalFn | undefined;
}

/**
 * An explicit window frame (`ROWS | RANGE | GROUPS BETWEEN start AND end
 * [EXCLUDE …]`). Offsets are evaluated once per partition (PostgreSQL forbids
 * column references in them). For RANGE with an offset, `shift(key, offset,
 * back)` is the single ORDER BY key moved by the offset (back: towards
 * PRECEDING in ascending order).
 */
export interface WindowFrameSpec {
  readonly mode: 'rows' | 'range' | 'groups';
  readonly start: FrameBoundSpec;
  readonly end: FrameBoundSpec;
  readonly exclude: 'no others' | 'current row' | 'group' | 'ties';
  readonly shift: ((key: Exclude<Datum, null>, offset: Exclude<Datum, null>, back: boolean) => Datum) | undefined;
}

/**
 * Window functions sharing one window (PARTITION BY … ORDER BY … [frame]):
 * output row = input row ++ one value per function. Without a frame clause,
 * with ORDER BY the frame is RANGE UNBOUNDED PRECEDING … CURRENT ROW (peers
 * included), without it the whole partition. Frames apply to the aggregates,
 * first_value, last_value and nth_value; the ranking functions, ntile and
 * lag / lead ignore them.
 */
export interface WindowNode {
  readonly kind: 'window';
  readonly input: PlanNode;
  readonly partition: readonly EvalFn[];
  readonly partitionTypes: readonly SqlType[];
  readonly order: readonly { fn: EvalFn; desc: boolean; nullsFirst: boolean; cmp: (a: Exclude<Datum, null>, b: Exclude<Datum, null>) => number }[];
  readonly funcs: readonly WindowFuncSpec[];
  readonly frame: WindowFrameSpec | undefined;
  readonly text: string;
  readonly columns: readonly ScopeColumn[];
}

/**
 * A correlated subquery evaluated once per input row (apply): the row is
 * published in `outer` while the subquery runs, and its result is appended
 * to the row: the scalar value (scalar), the EXISTS boolean (exists), or the
 * array of its one column's values (array: ARRAY(subquery), and the IN / ANY /
 * ALL forms, which then compare against that array). The lateral modes are
 * a LATERAL join instead: the input row ++ each subquery row passing `on`
 * (lateral-left: ++ NULLs when none passes).
 */
export interface ApplyNode {
  readonly kind: 'apply';
  readonly input: PlanNode;
  readonly plan: PlanNode;
  readonly mode: 'scalar' | 'exists' | 'array' | 'lateral' | 'lateral-left';
  readonly outer: WeakMap<EvalEnv, readonly Datum[]>;
  /** lateral modes: the join condition over input row ++ subquery row. */
  readonly on?: EvalFn | undefined;
  readonly text: string;
  readonly columns: readonly ScopeColumn[];
}

/**
 * Set-returning functions in the select list (unnest of arrays): per input
 * row, as many rows as the longest array, each the input row ++ the i-th
 * element of every array (NULL past a shorter one); no rows when all are empty.
 */
export interface ProjectSetNode {
  readonly kind: 'project-set';
  readonly input: PlanNode;
  readonly arrays: readonly EvalFn[];
  readonly text: readonly string[];
  readonly columns: readonly ScopeColumn[];
}

export type QueryNode = ProjectSetNode | ApplyNode | HashJoinNode | LookupJoinNode | AggregateNode | DistinctNode | SetOpNode | SubqueriesNode | RecursiveCteNode | WorkingTableNode | WindowNode;

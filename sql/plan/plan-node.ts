/**
 * sql/plan/plan-node.ts — the plan tree the planner builds and the executor runs.
 *
 *   Select:   limit? ─ project ─ sort? ─ filter? ─ scan | values
 *   Insert:   insert ─ (values | query plan)
 *   Update:   update ─ filter? ─ scan(FOR UPDATE)
 *   Delete:   delete ─ filter? ─ scan(FOR UPDATE)
 *
 * Nodes are immutable data (a `kind`-tagged union) holding compiled
 * expressions (EvalFn closures over the row and the EvalEnv), so one plan
 * serves every execution of a prepared statement: parameters and the
 * transaction timestamp come from the EvalEnv at run time. Spans are
 * described by expressions and turned into keys at execution.
 *
 * Joins, aggregation and subqueries (issue 7) slot in as further node kinds
 * whose operators follow the same pull-based batch protocol (operators.ts).
 *
 * Every node can explain itself (explain.ts).
 */
import type { KVLockStrength } from '../kv.js';
import type { TableEntry } from '../catalog/catalog.js';
import type { IndexCodec } from '../rowenc/index-codec.js';
import type { EvalFn, ScopeColumn } from '../sem/expr.js';
import type { SqlType } from '../types/type.js';
import type { Datum } from '../sem/datum.js';
import type { QueryNode } from './query-nodes.js';

/** A bound of a range over the first non-equality key column. */
export interface KeyBound {
  readonly fn: EvalFn;
  readonly inclusive: boolean;
  readonly text: string;
}

/**
 * Which primary-index keys a scan reads:
 *   points: every key fully constrained by equalities / IN lists (one get each);
 *   range:  equality prefixes (IN lists on leading columns make several)
 *           plus optional bounds on the next key column — one span per
 *           prefix (an empty prefix with no bounds is the full table).
 */
export type SpanPlan =
  | { readonly kind: 'points'; readonly keys: readonly (readonly EvalFn[])[]; readonly text: readonly string[] }
  | {
      readonly kind: 'range';
      /**
       * One equality prefix per span: the cross product of the equalities and
       * IN lists on the leading key columns (a single empty prefix: one span).
       */
      readonly prefixes: readonly (readonly EvalFn[])[];
      readonly prefixText: readonly string[];
      readonly lo: KeyBound | undefined;
      readonly hi: KeyBound | undefined;
    };

export interface ScanNode {
  readonly kind: 'scan';
  readonly table: TableEntry;
  readonly alias: string;
  readonly spans: SpanPlan;
  readonly reverse: boolean;
  readonly lock: KVLockStrength;
  /** Columns to decode (by table ordinal). */
  readonly needed: Uint8Array;
  /** Row limit pushed into the scan (LIMIT + OFFSET), when nothing above filters. */
  readonly limit: EvalFn | undefined;
  readonly columns: readonly ScopeColumn[];
  /**
   * A secondary index read instead of the primary index (spans are over its
   * key); `join`: fetch each entry's primary row (index join) because the
   * index does not cover `needed` (or the scan locks rows).
   */
  readonly index?: { readonly codec: IndexCodec; readonly join: boolean } | undefined;
  /**
   * Every row will be read (an aggregation drains the scan): the executor
   * asks for its largest chunks from the first round trip instead of growing
   * from a small one.
   */
  readonly readsAll?: boolean | undefined;
}

export interface ValuesNode {
  readonly kind: 'values';
  readonly rows: readonly (readonly EvalFn[])[];
  readonly columns: readonly ScopeColumn[];
}

export interface FilterNode {
  readonly kind: 'filter';
  readonly input: PlanNode;
  readonly pred: EvalFn;
  readonly text: string;
  readonly columns: readonly ScopeColumn[];
}

export interface SortKey {
  readonly fn: EvalFn;
  readonly desc: boolean;
  readonly nullsFirst: boolean;
  readonly cmp: (a: Exclude<Datum, null>, b: Exclude<Datum, null>) => number;
  readonly text: string;
}

export interface SortNode {
  readonly kind: 'sort';
  readonly input: PlanNode;
  readonly keys: readonly SortKey[];
  /** LIMIT + OFFSET above the sort: only that many first rows are kept (top-K). */
  readonly limit?: EvalFn | undefined;
  readonly columns: readonly ScopeColumn[];
}

export interface LimitNode {
  readonly kind: 'limit';
  readonly input: PlanNode;
  readonly limit: EvalFn | undefined;
  readonly offset: EvalFn | undefined;
  readonly columns: readonly ScopeColumn[];
}

export interface ProjectNode {
  readonly kind: 'project';
  readonly input: PlanNode;
  readonly exprs: readonly EvalFn[];
  readonly text: readonly string[];
  readonly columns: readonly ScopeColumn[];
  /**
   * The projection hands back each input row unchanged (`SELECT *` over a
   * scan's fresh rows, no hidden column): the executor passes the batch
   * through instead of copying every row.
   */
  readonly identity?: boolean | undefined;
}

/** Output column of a statement: name and type (RowDescription). */
export interface ResultColumn {
  readonly name: string;
  readonly type: SqlType;
  readonly tableOid: number;
  readonly columnAttr: number;
}

export interface ConflictPlan {
  readonly action: 'nothing' | 'update';
  /** SET expressions over (existing row ++ excluded row); by table ordinal, undefined = keep. */
  readonly set: readonly (EvalFn | undefined)[];
  readonly where: EvalFn | undefined;
}

export interface InsertNode {
  readonly kind: 'insert';
  readonly table: TableEntry;
  /** Produces full table rows (defaults filled, assignment casts applied). */
  readonly input: PlanNode;
  readonly onConflict: ConflictPlan | undefined;
  readonly returning: ProjectNode | undefined;
  readonly upsert: boolean;
  readonly columns: readonly ScopeColumn[];
}

export interface UpdateNode {
  readonly kind: 'update';
  readonly table: TableEntry;
  readonly input: PlanNode;
  /** New value per table ordinal, undefined = unchanged; over the old row. */
  readonly set: readonly (EvalFn | undefined)[];
  readonly returning: ProjectNode | undefined;
  readonly columns: readonly ScopeColumn[];
}

export interface DeleteNode {
  readonly kind: 'delete';
  readonly table: TableEntry;
  readonly input: PlanNode;
  readonly returning: ProjectNode | undefined;
  readonly columns: readonly ScopeColumn[];
}

export type PlanNode = ScanNode | ValuesNode | FilterNode | SortNode | LimitNode | ProjectNode | InsertNode | UpdateNode | DeleteNode | QueryNode;

/** A planned row-returning or row-modifying statement. */
export interface QueryPlan {
  readonly root: PlanNode;
  /** Result columns, or undefined for DML without RETURNING. */
  readonly result: readonly ResultColumn[] | undefined;
  /** Command tag prefix: SELECT, INSERT, UPDATE, DELETE. */
  readonly tag: 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE';
  /** The catalog snapshot version the plan was built against. */
  readonly schemaVersion: number;
  readonly writes: boolean;
}

/**
 * libpg-query's JSON parse tree (PostgreSQL 18 raw parse nodes, typed by
 * @pgsql/types) → Cairn's AST (ast.ts).
 *
 * Contract:
 *   - Input is one RawStmt's `stmt` node exactly as `parseSync` returns it:
 *     default-valued fields are omitted (ival 0 is `{}`, false booleans are
 *     absent), so every read here supplies the default.
 *   - Anything the AST cannot express raises SqlError 0A000
 *     `unimplemented: <construct>` naming the construct in SQL terms
 *     ("unimplemented: CREATE TRIGGER", "unimplemented: FOREIGN KEY").
 *   - `$n` parameters are recorded in the Converter as they are met, with the
 *     type of the first cast applied directly to them.
 *   - Nesting (expressions, subqueries, joins) is capped at MAX_DEPTH:
 *     deeper statements raise SqlError 54001, so recursive consumers of the
 *     AST never meet a tree that overflows the JS stack.
 *   - Pure: no I/O, no global state; one Converter per statement.
 *
 * Ownership: sql/parser. The node names in `case` labels are PostgreSQL's
 * (src/include/nodes/parsenodes.h), which is where to look for their fields.
 */
import type {
  A_Const,
  A_Expr,
  AlterRoleStmt,
  AlterTableCmd as PgAlterTableCmd,
  AlterTableStmt,
  CopyStmt,
  CreateSeqStmt,
  RenameStmt,
  TruncateStmt,
  ViewStmt,
  BoolExpr as PgBoolExpr,
  CaseExpr as PgCaseExpr,
  ColumnDef as PgColumnDef,
  ColumnRef as PgColumnRef,
  CommonTableExpr as PgCommonTableExpr,
  Constraint,
  CreateRoleStmt,
  CreateStmt,
  CreatedbStmt,
  DefElem,
  DeleteStmt,
  DropRoleStmt,
  DropStmt,
  DropdbStmt,
  ExplainStmt,
  FuncCall as PgFuncCall,
  IndexElem as PgIndexElem,
  IndexStmt,
  InsertStmt,
  JoinExpr as PgJoinExpr,
  LockingClause as PgLockingClause,
  Node,
  RangeVar,
  ResTarget,
  SelectStmt,
  SortBy as PgSortBy,
  SubLink as PgSubLink,
  TransactionStmt,
  TypeName as PgTypeName,
  UpdateStmt,
  VariableSetStmt,
  VariableShowStmt,
  WindowDef as PgWindowDef,
  WithClause as PgWithClause,
  Alias as PgAlias,
  RangeSubselect,
} from 'libpg-query';
import { assert } from '../../src/util/assert.js';
import type {
  Alias,
  AlterTableCmd,
  ColumnDef,
  CommonTableExpr,
  Const,
  Expr,
  FrameBound,
  FuncCall,
  IndexElem,
  LockingClause,
  NamedWindow,
  OnConflict,
  ParamInfo,
  RenameStatement,
  RoleOptions,
  SelectBody,
  SelectStatement,
  SelectTarget,
  SetClause,
  SortBy,
  SqlValueFunctionName,
  Statement,
  SubscriptEntry,
  TableConstraint,
  FkAction,
  ForeignKeyConstraint,
  TableExpr,
  TableName,
  TransactionModes,
  TypeName,
  WindowDef,
  WindowFrame,
  WithClause,
  CheckConstraint,
} from './ast.js';
import { SqlError, syntaxError, unimplemented } from './sql-error.js';

type Tagged = { readonly [tag: string]: unknown };

/** The single key of a libpg-query node wrapper (`{ SelectStmt: {...} }` → "SelectStmt"). */
function tagOf(n: Node): string {
  for (const k in n) return k;
  assert(false, 'parser: empty parse node');
}

function body<T>(n: Node, tag: string): T {
  return (n as Tagged)[tag] as T;
}

function str(n: Node): string {
  const s = (n as { String?: { sval?: string } }).String;
  if (s === undefined) throw unimplemented(`name element ${tagOf(n)}`);
  return s.sval ?? '';
}

function strs(list: readonly Node[] | undefined): string[] {
  return list === undefined ? [] : list.map(str);
}

const EMPTY: readonly never[] = Object.freeze([]);

/** Canonical type names (see TypeName in ast.ts). */
const TYPE_ALIASES: ReadonlyMap<string, string> = new Map([
  ['int', 'int4'],
  ['integer', 'int4'],
  ['smallint', 'int2'],
  ['bigint', 'int8'],
  ['real', 'float4'],
  ['float', 'float8'],
  ['double precision', 'float8'],
  ['boolean', 'bool'],
  ['decimal', 'numeric'],
  ['dec', 'numeric'],
  ['character varying', 'varchar'],
  ['character', 'char'],
  ['bpchar', 'char'],
  ['string', 'text'],
  ['bytes', 'bytea'],
  ['timestamp without time zone', 'timestamp'],
  ['timestamp with time zone', 'timestamptz'],
  ['time without time zone', 'time'],
  ['time with time zone', 'timetz'],
]);

const SERIALS: ReadonlyMap<string, { serial: 'smallserial' | 'serial' | 'bigserial'; type: string }> = new Map([
  ['smallserial', { serial: 'smallserial', type: 'int2' }],
  ['serial2', { serial: 'smallserial', type: 'int2' }],
  ['serial', { serial: 'serial', type: 'int4' }],
  ['serial4', { serial: 'serial', type: 'int4' }],
  ['bigserial', { serial: 'bigserial', type: 'int8' }],
  ['serial8', { serial: 'bigserial', type: 'int8' }],
]);

const SVF_NAMES: Readonly<Record<string, SqlValueFunctionName>> = {
  SVFOP_CURRENT_DATE: 'current_date',
  SVFOP_CURRENT_TIME: 'current_time',
  SVFOP_CURRENT_TIME_N: 'current_time',
  SVFOP_CURRENT_TIMESTAMP: 'current_timestamp',
  SVFOP_CURRENT_TIMESTAMP_N: 'current_timestamp',
  SVFOP_LOCALTIME: 'localtime',
  SVFOP_LOCALTIME_N: 'localtime',
  SVFOP_LOCALTIMESTAMP: 'localtimestamp',
  SVFOP_LOCALTIMESTAMP_N: 'localtimestamp',
  SVFOP_CURRENT_ROLE: 'current_role',
  SVFOP_CURRENT_USER: 'current_user',
  SVFOP_USER: 'user',
  SVFOP_SESSION_USER: 'session_user',
  SVFOP_CURRENT_CATALOG: 'current_catalog',
  SVFOP_CURRENT_SCHEMA: 'current_schema',
};

/** Names of PostgreSQL statement nodes, for `unimplemented: …` messages. */
const STATEMENT_NAMES: Readonly<Record<string, string>> = {
  AlterSeqStmt: 'ALTER SEQUENCE',
  CreateTrigStmt: 'CREATE TRIGGER',
  CreateFunctionStmt: 'CREATE FUNCTION',
  CreateSchemaStmt: 'CREATE SCHEMA',
  GrantStmt: 'GRANT',
  GrantRoleStmt: 'GRANT role',
  CommentStmt: 'COMMENT',
  PrepareStmt: 'PREPARE',
  ExecuteStmt: 'EXECUTE',
  DeallocateStmt: 'DEALLOCATE',
  DoStmt: 'DO',
  VacuumStmt: 'VACUUM',
  LockStmt: 'LOCK',
  ListenStmt: 'LISTEN',
  NotifyStmt: 'NOTIFY',
  DeclareCursorStmt: 'DECLARE',
  FetchStmt: 'FETCH',
  ClosePortalStmt: 'CLOSE',
  DiscardStmt: 'DISCARD',
  CallStmt: 'CALL',
  MergeStmt: 'MERGE',
  CreateExtensionStmt: 'CREATE EXTENSION',
  CreateEnumStmt: 'CREATE TYPE',
  CompositeTypeStmt: 'CREATE TYPE',
  CreateDomainStmt: 'CREATE DOMAIN',
  AlterDatabaseStmt: 'ALTER DATABASE',
  AlterDatabaseSetStmt: 'ALTER DATABASE',
  AlterRoleSetStmt: 'ALTER ROLE … SET',
  CheckPointStmt: 'CHECKPOINT',
  ReindexStmt: 'REINDEX',
  ClusterStmt: 'CLUSTER',
  RuleStmt: 'CREATE RULE',
  CreatePolicyStmt: 'CREATE POLICY',
  RefreshMatViewStmt: 'REFRESH MATERIALIZED VIEW',
  AlterOwnerStmt: 'ALTER … OWNER',
  AlterObjectSchemaStmt: 'ALTER … SET SCHEMA',
  ReassignOwnedStmt: 'REASSIGN OWNED',
  DropOwnedStmt: 'DROP OWNED',
};

/** Role options kept by name in RoleOptions.options (PostgreSQL's DefElem names). */
const ROLE_OPTIONS: ReadonlySet<string> = new Set(['superuser', 'createdb', 'createrole', 'inherit', 'isreplication', 'bypassrls', 'connectionlimit', 'validUntil']);

/**
 * The deepest expression/query/join nesting accepted. PostgreSQL itself stops
 * at its max_stack_depth (2 MB, a few thousand levels); 1,000 keeps Cairn's
 * recursive code well inside Node's default stack.
 */
const MAX_DEPTH = 1000;

function tooComplex(): SqlError {
  return new SqlError('sql.too_complex', '54001', 'stack depth limit exceeded', { hint: `expressions, subqueries and joins may nest at most ${MAX_DEPTH} deep` });
}

/** Decoded FRAMEOPTION_* bits (PostgreSQL parsenodes.h). */
const FRAME = {
  NONDEFAULT: 0x1,
  RANGE: 0x2,
  ROWS: 0x4,
  GROUPS: 0x8,
  BETWEEN: 0x10,
  START_UNBOUNDED_PRECEDING: 0x20,
  END_UNBOUNDED_PRECEDING: 0x40,
  START_UNBOUNDED_FOLLOWING: 0x80,
  END_UNBOUNDED_FOLLOWING: 0x100,
  START_CURRENT_ROW: 0x200,
  END_CURRENT_ROW: 0x400,
  START_OFFSET_PRECEDING: 0x800,
  END_OFFSET_PRECEDING: 0x1000,
  START_OFFSET_FOLLOWING: 0x2000,
  END_OFFSET_FOLLOWING: 0x4000,
  EXCLUDE_CURRENT_ROW: 0x8000,
  EXCLUDE_GROUP: 0x10000,
  EXCLUDE_TIES: 0x20000,
} as const;

/** Converts one statement; collects its parameters. */
export class Converter {
  private readonly paramTypes = new Map<number, TypeName | undefined>();
  private maxParam = 0;

  /** Parameters seen so far, `params[i]` being `$(i+1)`. */
  params(): readonly ParamInfo[] {
    if (this.maxParam === 0) return EMPTY;
    const out: ParamInfo[] = [];
    for (let i = 1; i <= this.maxParam; i++) out.push({ index: i, type: this.paramTypes.get(i) });
    return out;
  }

  statement(n: Node): Statement {
    const tag = tagOf(n);
    switch (tag) {
      case 'SelectStmt':
        return this.select(body<SelectStmt>(n, tag));
      case 'InsertStmt':
        return this.insert(body<InsertStmt>(n, tag));
      case 'UpdateStmt':
        return this.update(body<UpdateStmt>(n, tag));
      case 'DeleteStmt':
        return this.delete(body<DeleteStmt>(n, tag));
      case 'CreateStmt':
        return this.createTable(body<CreateStmt>(n, tag));
      case 'IndexStmt':
        return this.createIndex(body<IndexStmt>(n, tag));
      case 'DropStmt':
        return this.drop(body<DropStmt>(n, tag));
      case 'CreatedbStmt': {
        const s = body<CreatedbStmt>(n, tag);
        if (s.options !== undefined && s.options.length > 0) throw unimplemented('CREATE DATABASE options');
        return { kind: 'CreateDatabase', name: s.dbname ?? '', ifNotExists: false };
      }
      case 'DropdbStmt': {
        const s = body<DropdbStmt>(n, tag);
        if (s.options !== undefined && s.options.length > 0) throw unimplemented('DROP DATABASE options');
        return { kind: 'DropDatabase', name: s.dbname ?? '', ifExists: s.missing_ok ?? false };
      }
      case 'AlterTableStmt':
        return this.alterTable(body<AlterTableStmt>(n, tag));
      case 'RenameStmt':
        return rename(body<RenameStmt>(n, tag));
      case 'ViewStmt':
        return this.createView(body<ViewStmt>(n, tag));
      case 'CreateSeqStmt':
        return createSequence(body<CreateSeqStmt>(n, tag));
      case 'TruncateStmt': {
        const t = body<TruncateStmt>(n, tag);
        return { kind: 'Truncate', tables: (t.relations ?? EMPTY).map((r) => tableName(onlyless(body<RangeVar>(r, 'RangeVar'), 'TRUNCATE ONLY'))), restartIdentity: t.restart_seqs ?? false, cascade: t.behavior === 'DROP_CASCADE' };
      }
      case 'CopyStmt':
        return this.copy(body<CopyStmt>(n, tag));
      case 'TransactionStmt':
        return this.transaction(body<TransactionStmt>(n, tag));
      case 'VariableSetStmt':
        return this.variableSet(body<VariableSetStmt>(n, tag));
      case 'VariableShowStmt': {
        const name = (body<VariableShowStmt>(n, tag).name ?? '').toLowerCase();
        // PostgreSQL's grammar reads `SHOW TABLES` as a variable; Cairn means the table list.
        if (name === 'tables') return { kind: 'ShowTables', database: undefined, schema: undefined };
        if (name === 'databases') return { kind: 'ShowDatabases' };
        return { kind: 'ShowVar', name };
      }
      case 'ExplainStmt':
        return this.explain(body<ExplainStmt>(n, tag));
      case 'CreateRoleStmt': {
        const s = body<CreateRoleStmt>(n, tag);
        if (s.stmt_type === 'ROLESTMT_GROUP') throw unimplemented('CREATE GROUP');
        return { kind: 'CreateRole', name: s.role ?? '', isUser: s.stmt_type === 'ROLESTMT_USER', ifNotExists: false, options: this.roleOptions(s.options) };
      }
      case 'AlterRoleStmt': {
        const s = body<AlterRoleStmt>(n, tag);
        if (s.role?.roletype !== 'ROLESPEC_CSTRING') throw unimplemented('ALTER ROLE of CURRENT_USER/SESSION_USER');
        if ((s.action ?? 1) !== 1) throw unimplemented('ALTER GROUP');
        return { kind: 'AlterRole', name: s.role.rolename ?? '', options: this.roleOptions(s.options) };
      }
      case 'DropRoleStmt': {
        const s = body<DropRoleStmt>(n, tag);
        const names = (s.roles ?? []).map((r) => {
          const spec = body<{ roletype?: string; rolename?: string }>(r, 'RoleSpec');
          if (spec?.roletype !== 'ROLESPEC_CSTRING') throw unimplemented('DROP ROLE of a role keyword');
          return spec.rolename ?? '';
        });
        return { kind: 'DropRole', names, ifExists: s.missing_ok ?? false };
      }
      case 'CreateTableAsStmt':
        throw unimplemented(body<{ objtype?: string }>(n, tag).objtype === 'OBJECT_MATVIEW' ? 'CREATE MATERIALIZED VIEW' : 'CREATE TABLE AS');
      default:
        throw unimplemented(STATEMENT_NAMES[tag] ?? tag.replace(/Stmt$/, ' statement'));
    }
  }

  // -------------------------------------------------------------------------
  // SELECT

  select(s: SelectStmt): SelectStatement {
    if (s.intoClause !== undefined) throw unimplemented('SELECT INTO');
    if (s.limitOption === 'LIMIT_OPTION_WITH_TIES') throw unimplemented('FETCH … WITH TIES');
    this.enter();
    const sel = this.selectNode(s);
    this.depth--;
    return sel;
  }

  private selectNode(s: SelectStmt): SelectStatement {
    return {
      kind: 'Select',
      with: this.withClause(s.withClause),
      body: this.selectBody(s),
      orderBy: this.sortList(s.sortClause),
      limit: this.limitCount(s.limitCount),
      offset: this.optExpr(s.limitOffset),
      locking: (s.lockingClause ?? EMPTY).map((l) => this.locking(body<PgLockingClause>(l, 'LockingClause'))),
      asOfSystemTime: undefined,
    };
  }

  /** LIMIT ALL arrives as a NULL constant: no limit. */
  private limitCount(n: Node | undefined): Expr | undefined {
    if (n === undefined) return undefined;
    const c = (n as { A_Const?: A_Const }).A_Const;
    if (c?.isnull === true) return undefined;
    return this.expr(n);
  }

  private selectBody(s: SelectStmt): SelectBody {
    const op = s.op ?? 'SETOP_NONE';
    if (op !== 'SETOP_NONE') {
      assert(s.larg !== undefined && s.rarg !== undefined, 'parser: set operation without operands');
      return {
        kind: 'SetOp',
        op: op === 'SETOP_UNION' ? 'union' : op === 'SETOP_INTERSECT' ? 'intersect' : 'except',
        all: s.all ?? false,
        left: this.setOperand(s.larg),
        right: this.setOperand(s.rarg),
      };
    }
    if (s.valuesLists !== undefined) {
      const rows = s.valuesLists.map((row) => this.exprs(body<{ items?: Node[] }>(row, 'List').items));
      const width = rows[0]?.length ?? 0;
      if (rows.some((r) => r.length !== width)) throw syntaxError('VALUES lists must all be the same length');
      return { kind: 'Values', rows };
    }
    if (s.groupDistinct === true) throw unimplemented('GROUP BY DISTINCT');
    let distinct: boolean | readonly Expr[] = false;
    if (s.distinctClause !== undefined) {
      // DISTINCT is a list holding one empty node; DISTINCT ON is the list of expressions.
      const first = s.distinctClause[0];
      distinct = s.distinctClause.length === 1 && (first === undefined || Object.keys(first).length === 0) ? true : this.exprs(s.distinctClause);
    }
    return {
      kind: 'SelectClause',
      distinct,
      targets: this.targets(s.targetList),
      from: (s.fromClause ?? EMPTY).map((f) => this.tableExpr(f)),
      where: this.optExpr(s.whereClause),
      groupBy: (s.groupClause ?? EMPTY).map((g) => this.groupItem(g)),
      having: this.optExpr(s.havingClause),
      windows: (s.windowClause ?? EMPTY).map((w): NamedWindow => {
        const def = body<PgWindowDef>(w, 'WindowDef');
        return { name: def.name ?? '', def: this.windowDef(def) };
      }),
    };
  }

  /** A set operand is a bare SelectStmt; one with its own ORDER BY/LIMIT/WITH stays a nested query. */
  private setOperand(s: SelectStmt): SelectBody {
    const whole = this.select(s);
    if (whole.with === undefined && whole.orderBy.length === 0 && whole.limit === undefined && whole.offset === undefined && whole.locking.length === 0) {
      return whole.body;
    }
    return whole;
  }

  private groupItem(n: Node): Expr {
    const tag = tagOf(n);
    if (tag === 'GroupingSet') throw unimplemented('GROUPING SETS / ROLLUP / CUBE');
    return this.expr(n);
  }

  private targets(list: readonly Node[] | undefined): SelectTarget[] {
    if (list === undefined) return [];
    return list.map((t) => {
      const rt = body<ResTarget>(t, 'ResTarget');
      assert(rt?.val !== undefined, 'parser: target without a value');
      if (rt.indirection !== undefined) throw unimplemented('target indirection');
      return { expr: this.expr(rt.val), alias: rt.name };
    });
  }

  private withClause(w: PgWithClause | undefined): WithClause | undefined {
    if (w === undefined) return undefined;
    return {
      recursive: w.recursive ?? false,
      ctes: (w.ctes ?? EMPTY).map((c): CommonTableExpr => {
        const cte = body<PgCommonTableExpr>(c, 'CommonTableExpr');
        if (cte.search_clause !== undefined || cte.cycle_clause !== undefined) throw unimplemented('WITH … SEARCH/CYCLE');
        assert(cte.ctequery !== undefined, 'parser: CTE without a query');
        const m = cte.ctematerialized ?? 'CTEMaterializeDefault';
        return {
          name: cte.ctename ?? '',
          columns: strs(cte.aliascolnames),
          materialized: m === 'CTEMaterializeAlways' ? 'always' : m === 'CTEMaterializeNever' ? 'never' : 'default',
          query: this.statement(cte.ctequery),
        };
      }),
    };
  }

  private locking(l: PgLockingClause): LockingClause {
    const strength = l.strength ?? 'LCS_FORUPDATE';
    const wait = l.waitPolicy ?? 'LockWaitBlock';
    return {
      strength: strength === 'LCS_FORKEYSHARE' ? 'key share' : strength === 'LCS_FORSHARE' ? 'share' : strength === 'LCS_FORNOKEYUPDATE' ? 'no key update' : 'update',
      of: (l.lockedRels ?? EMPTY).map((r) => tableName(body<RangeVar>(r, 'RangeVar'))),
      wait: wait === 'LockWaitSkip' ? 'skip locked' : wait === 'LockWaitError' ? 'nowait' : 'block',
    };
  }

  private tableExpr(n: Node): TableExpr {
    this.enter();
    const t = this.tableExprNode(n);
    this.depth--;
    return t;
  }

  private tableExprNode(n: Node): TableExpr {
    const tag = tagOf(n);
    switch (tag) {
      case 'RangeVar': {
        const rv = onlyless(body<RangeVar>(n, tag), 'ONLY');
        return { kind: 'TableRef', table: tableName(rv), alias: alias(rv.alias) };
      }
      case 'RangeSubselect': {
        const rs = body<RangeSubselect>(n, tag);
        assert(rs.subquery !== undefined, 'parser: subquery without a query');
        return { kind: 'SubqueryRef', query: this.select(body<SelectStmt>(rs.subquery, 'SelectStmt')), alias: alias(rs.alias), lateral: rs.lateral ?? false };
      }
      case 'JoinExpr': {
        const j = body<PgJoinExpr>(n, tag);
        assert(j.larg !== undefined && j.rarg !== undefined, 'parser: join without operands');
        if (j.join_using_alias !== undefined) throw unimplemented('JOIN … USING … AS alias');
        const natural = j.isNatural ?? false;
        const using = strs(j.usingClause);
        const on = this.optExpr(j.quals);
        const jt = j.jointype ?? 'JOIN_INNER';
        let type: 'inner' | 'left' | 'right' | 'full' | 'cross';
        if (jt === 'JOIN_INNER') type = !natural && on === undefined && using.length === 0 ? 'cross' : 'inner';
        else if (jt === 'JOIN_LEFT') type = 'left';
        else if (jt === 'JOIN_RIGHT') type = 'right';
        else if (jt === 'JOIN_FULL') type = 'full';
        else throw unimplemented(`join type ${jt}`);
        return { kind: 'Join', type, left: this.tableExpr(j.larg), right: this.tableExpr(j.rarg), natural, on, using, alias: alias(j.alias) };
      }
      case 'RangeFunction': {
        // A function in FROM (`SELECT * FROM current_schema()`, as TypeORM sends;
        // `generate_series(1, t.n)`, `unnest(t.arr) AS u(x)`) is the subquery
        // `(SELECT f(…) AS f) AS f`, LATERAL for the set-returning ones (a function in FROM
        // may read earlier FROM items). WITH ORDINALITY adds `row_number() OVER ()` as the
        // column `ordinality` (the subquery runs once per outer row, so it restarts per row);
        // ROWS FROM and column definitions stay 0A000.
        const rf = body<{ functions?: { List?: { items?: (Node | null)[] } }[]; alias?: PgAlias; ordinality?: boolean; lateral?: boolean; coldeflist?: unknown }>(n, tag);
        if ((rf.functions?.length ?? 0) > 1) throw unimplemented('ROWS FROM with several functions');
        if (rf.coldeflist !== undefined) throw unimplemented('column definition lists for functions in FROM');
        const fnode = rf.functions?.length === 1 ? rf.functions[0]?.List?.items?.[0] : undefined;
        const call = fnode === undefined || fnode === null ? undefined : this.expr(fnode);
        const fname = call?.kind === 'FuncCall' ? call.name[call.name.length - 1] : call?.kind === 'SqlValueFunction' ? call.name : undefined;
        const srf = fname !== undefined && SET_RETURNING_FROM_FUNCTIONS.has(fname);
        if (call === undefined || fname === undefined || (!SCALAR_FROM_FUNCTIONS.has(fname) && !srf)) throw unimplemented(fname === undefined ? 'function in FROM' : `function ${fname} in FROM`);
        const a = alias(rf.alias);
        const column = a?.columns[0] ?? (a !== undefined ? a.name : fname);
        const query: SelectStatement = {
          kind: 'Select',
          with: undefined,
          body: { kind: 'SelectClause', distinct: false, targets: [{ expr: call, alias: column }, ...(rf.ordinality === true ? [{ expr: ORDINALITY, alias: a?.columns[1] ?? 'ordinality' }] : [])], from: [], where: undefined, groupBy: [], having: undefined, windows: [] },
          orderBy: [],
          limit: undefined,
          offset: undefined,
          locking: [],
          asOfSystemTime: undefined,
        };
        return { kind: 'SubqueryRef', query, alias: { name: a?.name ?? fname, columns: [] }, lateral: srf };
      }
      default:
        throw unimplemented(`FROM item ${tag}`);
    }
  }

  private sortList(list: readonly Node[] | undefined): SortBy[] {
    if (list === undefined) return [];
    return list.map((n) => {
      const sb = body<PgSortBy>(n, 'SortBy');
      assert(sb?.node !== undefined, 'parser: ORDER BY without an expression');
      const dir = sb.sortby_dir ?? 'SORTBY_DEFAULT';
      if (dir === 'SORTBY_USING') throw unimplemented('ORDER BY … USING');
      const nulls = sb.sortby_nulls ?? 'SORTBY_NULLS_DEFAULT';
      return {
        expr: this.expr(sb.node),
        dir: dir === 'SORTBY_ASC' ? 'asc' : dir === 'SORTBY_DESC' ? 'desc' : 'default',
        nulls: nulls === 'SORTBY_NULLS_FIRST' ? 'first' : nulls === 'SORTBY_NULLS_LAST' ? 'last' : 'default',
      };
    });
  }

  /** `OVER w` arrives with `name` set, `OVER (w …)` with `refname`; both reference window w. */
  private windowDef(w: PgWindowDef, isOver = false): WindowDef {
    return {
      refName: w.refname ?? (isOver ? w.name : undefined),
      partitionBy: this.exprs(w.partitionClause),
      orderBy: this.sortList(w.orderClause),
      frame: this.frame(w.frameOptions ?? 0, w.startOffset, w.endOffset),
    };
  }

  private frame(opts: number, startOffset: Node | undefined, endOffset: Node | undefined): WindowFrame | undefined {
    if ((opts & FRAME.NONDEFAULT) === 0) return undefined;
    const mode = opts & FRAME.ROWS ? 'rows' : opts & FRAME.GROUPS ? 'groups' : 'range';
    const start: FrameBound =
      opts & FRAME.START_UNBOUNDED_PRECEDING
        ? { kind: 'unbounded preceding' }
        : opts & FRAME.START_UNBOUNDED_FOLLOWING
          ? { kind: 'unbounded following' }
          : opts & FRAME.START_CURRENT_ROW
            ? { kind: 'current row' }
            : opts & FRAME.START_OFFSET_PRECEDING
              ? { kind: 'preceding', offset: this.expr(req(startOffset)) }
              : { kind: 'following', offset: this.expr(req(startOffset)) };
    let end: FrameBound | undefined;
    if (opts & FRAME.BETWEEN) {
      end =
        opts & FRAME.END_UNBOUNDED_PRECEDING
          ? { kind: 'unbounded preceding' }
          : opts & FRAME.END_UNBOUNDED_FOLLOWING
            ? { kind: 'unbounded following' }
            : opts & FRAME.END_CURRENT_ROW
              ? { kind: 'current row' }
              : opts & FRAME.END_OFFSET_PRECEDING
                ? { kind: 'preceding', offset: this.expr(req(endOffset)) }
                : { kind: 'following', offset: this.expr(req(endOffset)) };
    }
    const exclude = opts & FRAME.EXCLUDE_CURRENT_ROW ? 'current row' : opts & FRAME.EXCLUDE_GROUP ? 'group' : opts & FRAME.EXCLUDE_TIES ? 'ties' : 'no others';
    return { mode, start, end, exclude };
  }

  // -------------------------------------------------------------------------
  // INSERT / UPDATE / DELETE

  private insert(s: InsertStmt): Statement {
    assert(s.relation !== undefined, 'parser: INSERT without a table');
    if (s.override !== undefined && s.override !== 'OVERRIDING_NOT_SET') throw unimplemented('INSERT … OVERRIDING');
    const columns = (s.cols ?? EMPTY).map((c) => {
      const rt = body<ResTarget>(c, 'ResTarget');
      if (rt.indirection !== undefined) throw unimplemented('INSERT column indirection');
      return rt.name ?? '';
    });
    let onConflict: OnConflict | undefined;
    const oc = s.onConflictClause;
    if (oc !== undefined) {
      const infer = oc.infer;
      const cols = (infer?.indexElems ?? EMPTY).map((e) => {
        const ie = body<PgIndexElem>(e, 'IndexElem');
        if (ie.name === undefined) throw unimplemented('ON CONFLICT on an expression');
        return ie.name;
      });
      const action: OnConflict['action'] =
        oc.action === 'ONCONFLICT_UPDATE' ? { kind: 'update', set: this.setClauses(oc.targetList), where: this.optExpr(oc.whereClause) } : { kind: 'nothing' };
      onConflict = { columns: cols, where: this.optExpr(infer?.whereClause), constraint: infer?.conname, action };
    }
    return {
      kind: 'Insert',
      with: this.withClause(s.withClause),
      table: tableName(s.relation),
      alias: s.relation.alias?.aliasname,
      columns,
      source: s.selectStmt === undefined ? undefined : this.select(body<SelectStmt>(s.selectStmt, 'SelectStmt')),
      upsert: false,
      onConflict,
      returning: this.returning(s.returningClause),
    };
  }

  private returning(r: { exprs?: Node[]; options?: Node[] } | undefined): SelectTarget[] {
    if (r === undefined) return [];
    if (r.options !== undefined && r.options.length > 0) throw unimplemented('RETURNING WITH (OLD/NEW)');
    return this.targets(r.exprs);
  }

  private setClauses(list: readonly Node[] | undefined): SetClause[] {
    return (list ?? EMPTY).map((n) => {
      const rt = body<ResTarget>(n, 'ResTarget');
      if (rt.indirection !== undefined) throw unimplemented('SET on a subscript or field');
      assert(rt.val !== undefined, 'parser: SET without a value');
      if (tagOf(rt.val) === 'MultiAssignRef') throw unimplemented('SET (a, b) = …');
      return { column: rt.name ?? '', value: this.expr(rt.val) };
    });
  }

  private update(s: UpdateStmt): Statement {
    assert(s.relation !== undefined, 'parser: UPDATE without a table');
    onlyless(s.relation, 'UPDATE ONLY');
    return {
      kind: 'Update',
      with: this.withClause(s.withClause),
      table: tableName(s.relation),
      alias: s.relation.alias?.aliasname,
      set: this.setClauses(s.targetList),
      from: (s.fromClause ?? EMPTY).map((f) => this.tableExpr(f)),
      where: this.optExpr(s.whereClause),
      returning: this.returning(s.returningClause),
    };
  }

  private delete(s: DeleteStmt): Statement {
    assert(s.relation !== undefined, 'parser: DELETE without a table');
    onlyless(s.relation, 'DELETE ONLY');
    return {
      kind: 'Delete',
      with: this.withClause(s.withClause),
      table: tableName(s.relation),
      alias: s.relation.alias?.aliasname,
      using: (s.usingClause ?? EMPTY).map((f) => this.tableExpr(f)),
      where: this.optExpr(s.whereClause),
      returning: this.returning(s.returningClause),
    };
  }

  // -------------------------------------------------------------------------
  // DDL

  private createTable(s: CreateStmt): Statement {
    assert(s.relation !== undefined, 'parser: CREATE TABLE without a name');
    if (s.relation.relpersistence === 't') throw unimplemented('CREATE TEMPORARY TABLE');
    if (s.relation.relpersistence === 'u') throw unimplemented('CREATE UNLOGGED TABLE');
    if (s.inhRelations !== undefined) throw unimplemented('CREATE TABLE … INHERITS');
    if (s.partspec !== undefined || s.partbound !== undefined) throw unimplemented('partitioned tables');
    if (s.ofTypename !== undefined) throw unimplemented('CREATE TABLE … OF type');
    // fillfactor (pgbench sends it) is a heap-page hint with no meaning for Cairn's storage: accepted, ignored.
    const options = (s.options ?? []) as unknown as { DefElem?: { defname?: string } }[];
    if (options.some((o) => o.DefElem?.defname !== 'fillfactor')) throw unimplemented('CREATE TABLE … WITH (options)');
    if (s.oncommit !== undefined && s.oncommit !== 'ONCOMMIT_NOOP') throw unimplemented('ON COMMIT');
    if (s.tablespacename !== undefined) throw unimplemented('TABLESPACE');
    const columns: ColumnDef[] = [];
    const constraints: TableConstraint[] = [];
    for (const elt of s.tableElts ?? EMPTY) {
      const tag = tagOf(elt);
      if (tag === 'ColumnDef') columns.push(this.columnDef(body<PgColumnDef>(elt, tag)));
      else if (tag === 'Constraint') constraints.push(this.tableConstraint(body<Constraint>(elt, tag)));
      else if (tag === 'TableLikeClause') throw unimplemented('CREATE TABLE … LIKE');
      else throw unimplemented(`table element ${tag}`);
    }
    return { kind: 'CreateTable', table: tableName(s.relation), ifNotExists: s.if_not_exists ?? false, columns, constraints };
  }

  private columnDef(c: PgColumnDef): ColumnDef {
    assert(c.typeName !== undefined, 'parser: column without a type');
    let type = typeName(c.typeName);
    let serial: ColumnDef['serial'];
    const sr = type.arrayDims === 0 && type.mods.length === 0 ? SERIALS.get(type.name) : undefined;
    if (sr !== undefined) {
      serial = sr.serial;
      type = { name: sr.type, mods: EMPTY, arrayDims: 0 };
    }
    let notNull = false;
    let nullable = false;
    let dflt: Expr | undefined;
    let primaryKey = false;
    let unique = false;
    const checks: CheckConstraint[] = [];
    const references: ForeignKeyConstraint[] = [];
    for (const cn of c.constraints ?? EMPTY) {
      const k = body<Constraint>(cn, 'Constraint');
      switch (k.contype) {
        case 'CONSTR_NOTNULL':
          notNull = true;
          break;
        case 'CONSTR_NULL':
          nullable = true;
          break;
        case 'CONSTR_DEFAULT':
          dflt = this.expr(req(k.raw_expr));
          break;
        case 'CONSTR_PRIMARY':
          this.checkIndexConstraint(k);
          primaryKey = true;
          break;
        case 'CONSTR_UNIQUE':
          this.checkIndexConstraint(k);
          unique = true;
          break;
        case 'CONSTR_CHECK':
          if (k.is_no_inherit === true) throw unimplemented('CHECK … NO INHERIT');
          checks.push({ name: k.conname, expr: this.expr(req(k.raw_expr)) });
          break;
        case 'CONSTR_FOREIGN':
          references.push(foreignKey(k, [c.colname ?? '']));
          break;
        default:
          throw unimplemented(constraintName(k.contype));
      }
    }
    const collation = c.collClause === undefined ? undefined : strs(c.collClause.collname);
    const def: ColumnDef = { name: c.colname ?? '', type, serial, notNull, nullable, default: dflt, primaryKey, unique, checks, collation };
    return references.length > 0 ? { ...def, references } : def;
  }

  private checkIndexConstraint(k: Constraint): void {
    if (k.options !== undefined || k.indexspace !== undefined || k.including !== undefined) throw unimplemented('index options on a constraint');
    if (k.nulls_not_distinct === true) throw unimplemented('NULLS NOT DISTINCT');
    if (k.deferrable === true) throw unimplemented('DEFERRABLE constraints');
  }

  private tableConstraint(k: Constraint): TableConstraint {
    switch (k.contype) {
      case 'CONSTR_PRIMARY':
        this.checkIndexConstraint(k);
        return { kind: 'PrimaryKey', name: k.conname, columns: strs(k.keys) };
      case 'CONSTR_UNIQUE':
        this.checkIndexConstraint(k);
        return { kind: 'Unique', name: k.conname, columns: strs(k.keys) };
      case 'CONSTR_CHECK':
        return { kind: 'Check', name: k.conname, expr: this.expr(req(k.raw_expr)) };
      case 'CONSTR_FOREIGN':
        return foreignKey(k, strs(k.fk_attrs));
      default:
        throw unimplemented(constraintName(k.contype));
    }
  }

  private createIndex(s: IndexStmt): Statement {
    assert(s.relation !== undefined, 'parser: CREATE INDEX without a table');
    if (s.concurrent === true) throw unimplemented('CREATE INDEX CONCURRENTLY');
    if (s.accessMethod !== undefined && s.accessMethod !== 'btree') throw unimplemented(`index method ${s.accessMethod}`);
    if (s.options !== undefined || s.tableSpace !== undefined) throw unimplemented('index storage options');
    if (s.nulls_not_distinct === true) throw unimplemented('NULLS NOT DISTINCT');
    const elem = (n: Node): IndexElem => {
      const ie = body<PgIndexElem>(n, 'IndexElem');
      if (ie.collation !== undefined || ie.opclass !== undefined) throw unimplemented('index COLLATE/operator class');
      const dir = ie.ordering ?? 'SORTBY_DEFAULT';
      const nulls = ie.nulls_ordering ?? 'SORTBY_NULLS_DEFAULT';
      return {
        column: ie.name,
        expr: ie.expr === undefined ? undefined : this.expr(ie.expr),
        dir: dir === 'SORTBY_ASC' ? 'asc' : dir === 'SORTBY_DESC' ? 'desc' : 'default',
        nulls: nulls === 'SORTBY_NULLS_FIRST' ? 'first' : nulls === 'SORTBY_NULLS_LAST' ? 'last' : 'default',
      };
    };
    return {
      kind: 'CreateIndex',
      name: s.idxname,
      table: tableName(s.relation),
      unique: s.unique ?? false,
      ifNotExists: s.if_not_exists ?? false,
      columns: (s.indexParams ?? EMPTY).map(elem),
      storing: (s.indexIncludingParams ?? EMPTY).map((n) => {
        const e = elem(n);
        if (e.column === undefined) throw unimplemented('INCLUDE of an expression');
        return e.column;
      }),
      where: this.optExpr(s.whereClause),
    };
  }

  private drop(s: DropStmt): Statement {
    if (s.concurrent === true) throw unimplemented('DROP … CONCURRENTLY');
    const cascade = s.behavior === 'DROP_CASCADE';
    const ifExists = s.missing_ok ?? false;
    const names = (s.objects ?? EMPTY).map((o) => {
      const parts = strs(body<{ items?: Node[] }>(o, 'List')?.items);
      return nameFromParts(parts);
    });
    switch (s.removeType) {
      case 'OBJECT_TABLE':
        return { kind: 'DropTable', tables: names, ifExists, cascade };
      case 'OBJECT_INDEX':
        return { kind: 'DropIndex', indexes: names.map((index) => ({ table: undefined, index })), ifExists, cascade };
      case 'OBJECT_VIEW':
        return { kind: 'DropView', views: names, ifExists, cascade };
      case 'OBJECT_SEQUENCE':
        return { kind: 'DropSequence', sequences: names, ifExists, cascade };
      default:
        throw unimplemented(`DROP ${(s.removeType ?? 'OBJECT_UNKNOWN').slice('OBJECT_'.length).replace(/_/g, ' ')}`);
    }
  }

  private alterTable(s: AlterTableStmt): Statement {
    assert(s.relation !== undefined, 'parser: ALTER TABLE without a table');
    if (s.objtype !== 'OBJECT_TABLE') throw unimplemented(`ALTER ${(s.objtype ?? 'OBJECT_UNKNOWN').slice('OBJECT_'.length).replace(/_/g, ' ')}`);
    onlyless(s.relation, 'ALTER TABLE ONLY');
    const commands = (s.cmds ?? EMPTY).map((c) => this.alterTableCmd(body<PgAlterTableCmd>(c, 'AlterTableCmd')));
    return { kind: 'AlterTable', table: tableName(s.relation), ifExists: s.missing_ok ?? false, commands };
  }

  private alterTableCmd(c: PgAlterTableCmd): AlterTableCmd {
    const column = c.name ?? '';
    const cascade = c.behavior === 'DROP_CASCADE';
    switch (c.subtype) {
      case 'AT_AddColumn':
        return { kind: 'AddColumn', column: this.columnDef(body<PgColumnDef>(req(c.def), 'ColumnDef')), ifNotExists: c.missing_ok ?? false };
      case 'AT_DropColumn':
        return { kind: 'DropColumn', column, ifExists: c.missing_ok ?? false, cascade };
      case 'AT_ColumnDefault':
        return { kind: 'SetDefault', column, default: this.optExpr(c.def) };
      case 'AT_SetNotNull':
      case 'AT_DropNotNull':
        return { kind: 'SetNotNull', column, notNull: c.subtype === 'AT_SetNotNull' };
      case 'AT_AlterColumnType': {
        const def = body<PgColumnDef>(req(c.def), 'ColumnDef');
        if (def.collClause !== undefined) throw unimplemented('ALTER COLUMN TYPE … COLLATE');
        return { kind: 'AlterColumnType', column, type: typeName(req(def.typeName)), using: this.optExpr(def.raw_default) };
      }
      case 'AT_AddConstraint':
        return { kind: 'AddConstraint', constraint: this.tableConstraint(body<Constraint>(req(c.def), 'Constraint')) };
      case 'AT_DropConstraint':
        return { kind: 'DropConstraint', name: column, ifExists: c.missing_ok ?? false, cascade };
      case 'AT_ValidateConstraint':
        return { kind: 'ValidateConstraint', name: column };
      default:
        throw unimplemented(`ALTER TABLE ${(c.subtype ?? 'AT_Unknown').slice('AT_'.length)}`);
    }
  }

  private createView(v: ViewStmt): Statement {
    assert(v.view !== undefined && v.query !== undefined, 'parser: CREATE VIEW without a name or query');
    if (v.view.relpersistence === 't') throw unimplemented('CREATE TEMPORARY VIEW');
    if (v.options !== undefined) throw unimplemented('CREATE VIEW … WITH (options)');
    if (v.withCheckOption !== undefined && v.withCheckOption !== 'NO_CHECK_OPTION') throw unimplemented('WITH CHECK OPTION');
    return { kind: 'CreateView', view: tableName(v.view), columns: strs(v.aliases), query: this.select(body<SelectStmt>(v.query, 'SelectStmt')), orReplace: v.replace ?? false };
  }

  private copy(c: CopyStmt): Statement {
    if (c.is_program === true || c.filename !== undefined) throw unimplemented('COPY to or from a file or program');
    if (c.whereClause !== undefined) throw unimplemented('COPY … WHERE');
    const options = (c.options ?? EMPTY).map((o) => {
      const d = body<DefElem>(o, 'DefElem');
      const v = defElemValue(d);
      return { name: (d.defname ?? '').toLowerCase(), value: v === undefined ? undefined : String(v) };
    });
    return {
      kind: 'Copy',
      table: c.relation === undefined ? undefined : tableName(onlyless(c.relation, 'COPY ONLY')),
      columns: strs(c.attlist),
      query: c.query === undefined ? undefined : this.statement(c.query),
      direction: c.is_from === true ? 'from' : 'to',
      options,
    };
  }

  // -------------------------------------------------------------------------
  // Transactions, session variables, EXPLAIN, roles

  private transaction(s: TransactionStmt): Statement {
    if (s.chain === true) throw unimplemented('AND CHAIN');
    switch (s.kind) {
      case 'TRANS_STMT_BEGIN':
      case 'TRANS_STMT_START':
        return { kind: 'Begin', modes: this.transactionModes(s.options) };
      case 'TRANS_STMT_COMMIT':
        return { kind: 'Commit' };
      case 'TRANS_STMT_ROLLBACK':
        return { kind: 'Rollback' };
      case 'TRANS_STMT_SAVEPOINT':
        return { kind: 'Savepoint', name: s.savepoint_name ?? '' };
      case 'TRANS_STMT_RELEASE':
        return { kind: 'ReleaseSavepoint', name: s.savepoint_name ?? '' };
      case 'TRANS_STMT_ROLLBACK_TO':
        return { kind: 'RollbackToSavepoint', name: s.savepoint_name ?? '' };
      default:
        throw unimplemented('two-phase commit');
    }
  }

  transactionModes(options: readonly Node[] | undefined): TransactionModes {
    let isolation: TransactionModes['isolation'];
    let readOnly: boolean | undefined;
    let deferrable: boolean | undefined;
    for (const o of options ?? EMPTY) {
      const d = body<DefElem>(o, 'DefElem');
      const arg = d.arg === undefined ? undefined : this.expr(d.arg);
      const v = arg?.kind === 'Const' ? arg.value : undefined;
      if (d.defname === 'transaction_isolation') isolation = String(v) as TransactionModes['isolation'];
      else if (d.defname === 'transaction_read_only') readOnly = v === 1 || v === true;
      else if (d.defname === 'transaction_deferrable') deferrable = v === 1 || v === true;
      else throw unimplemented(`transaction mode ${d.defname ?? ''}`);
    }
    return { isolation, readOnly, deferrable, asOfSystemTime: undefined };
  }

  private variableSet(s: VariableSetStmt): Statement {
    const name = (s.name ?? '').toLowerCase();
    switch (s.kind) {
      case 'VAR_SET_VALUE':
        return { kind: 'SetVar', name, values: this.exprs(s.args), isDefault: false, local: s.is_local ?? false };
      case 'VAR_SET_DEFAULT':
        return { kind: 'SetVar', name, values: EMPTY, isDefault: true, local: s.is_local ?? false };
      case 'VAR_RESET':
        return { kind: 'ResetVar', name };
      case 'VAR_RESET_ALL':
        return { kind: 'ResetVar', name: 'all' };
      case 'VAR_SET_MULTI':
        if (name === 'transaction') return { kind: 'SetTransaction', modes: this.transactionModes(s.args) };
        throw unimplemented(`SET ${name.toUpperCase()}`);
      default:
        throw unimplemented('SET … FROM CURRENT');
    }
  }

  private explain(s: ExplainStmt): Statement {
    assert(s.query !== undefined, 'parser: EXPLAIN without a statement');
    const options = (s.options ?? EMPTY).map((o) => {
      const d = body<DefElem>(o, 'DefElem');
      const v = defElemValue(d);
      return { name: (d.defname ?? '').toLowerCase(), value: v === undefined ? undefined : String(v) };
    });
    return { kind: 'Explain', options, statement: this.statement(s.query) };
  }

  private roleOptions(list: readonly Node[] | undefined): RoleOptions {
    let password: string | null | undefined;
    let login: boolean | undefined;
    const options: { name: string; value: string | number | boolean | undefined }[] = [];
    for (const o of list ?? EMPTY) {
      const d = body<DefElem>(o, 'DefElem');
      const value = defElemValue(d);
      if (d.defname === 'password') password = value === undefined ? null : String(value);
      else if (d.defname === 'canlogin') login = value === true;
      else if (ROLE_OPTIONS.has(d.defname ?? '')) options.push({ name: d.defname ?? '', value });
      else throw unimplemented(`role option ${d.defname ?? ''}`);
    }
    return { password, login, options };
  }

  // -------------------------------------------------------------------------
  // Expressions

  private optExpr(n: Node | undefined): Expr | undefined {
    return n === undefined ? undefined : this.expr(n);
  }

  exprs(list: readonly Node[] | undefined): Expr[] {
    if (list === undefined) return [];
    const out: Expr[] = new Array(list.length);
    for (let i = 0; i < list.length; i++) out[i] = this.expr(list[i] as Node);
    return out;
  }

  /**
   * Nesting depth of the node being converted. Capped (MAX_DEPTH) so that
   * every recursive consumer of the AST — this converter, walkers, printer,
   * planner — stays far from the JS stack limit.
   */
  private depth = 0;

  private enter(): void {
    if (++this.depth > MAX_DEPTH) throw tooComplex();
  }

  expr(n: Node): Expr {
    this.enter();
    const e = this.exprNode(n);
    this.depth--;
    return e;
  }

  private exprNode(n: Node): Expr {
    const tag = tagOf(n);
    switch (tag) {
      case 'ColumnRef':
        return this.columnRef(body<PgColumnRef>(n, tag));
      case 'A_Const':
        return constant(body<A_Const>(n, tag));
      case 'ParamRef': {
        const index = body<{ number?: number }>(n, tag).number ?? 0;
        if (index <= 0) throw unimplemented('parameter $0');
        this.noteParam(index, undefined);
        return { kind: 'Param', index };
      }
      case 'A_Expr':
        return this.aExpr(body<A_Expr>(n, tag));
      case 'BoolExpr': {
        const b = body<PgBoolExpr>(n, tag);
        const op = b.boolop === 'AND_EXPR' ? 'and' : b.boolop === 'OR_EXPR' ? 'or' : 'not';
        return { kind: 'BoolExpr', op, args: this.exprs(b.args) };
      }
      case 'FuncCall':
        return this.funcCall(body<PgFuncCall>(n, tag));
      case 'TypeCast': {
        const c = body<{ arg?: Node; typeName?: PgTypeName }>(n, tag);
        const arg = this.expr(req(c.arg));
        const type = typeName(req(c.typeName));
        if (SERIALS.has(type.name)) throw unimplemented(`type ${type.name} outside a column definition`);
        if (arg.kind === 'Param') this.noteParam(arg.index, type);
        return { kind: 'Cast', arg, type };
      }
      case 'CaseExpr': {
        const c = body<PgCaseExpr>(n, tag);
        return {
          kind: 'Case',
          operand: this.optExpr(c.arg),
          whens: (c.args ?? EMPTY).map((w) => {
            const cw = body<{ expr?: Node; result?: Node }>(w, 'CaseWhen');
            return { when: this.expr(req(cw.expr)), then: this.expr(req(cw.result)) };
          }),
          else: this.optExpr(c.defresult),
        };
      }
      case 'NullTest': {
        const t = body<{ arg?: Node; nulltesttype?: string; argisrow?: boolean }>(n, tag);
        return { kind: 'NullTest', arg: this.expr(req(t.arg)), not: t.nulltesttype === 'IS_NOT_NULL' };
      }
      case 'BooleanTest': {
        const t = body<{ arg?: Node; booltesttype?: string }>(n, tag);
        const bt = t.booltesttype ?? 'IS_TRUE';
        const test = bt.endsWith('TRUE') ? 'true' : bt.endsWith('FALSE') ? 'false' : 'unknown';
        return { kind: 'BooleanTest', arg: this.expr(req(t.arg)), test, not: bt.startsWith('IS_NOT_') };
      }
      case 'SubLink':
        return this.subLink(body<PgSubLink>(n, tag));
      case 'A_ArrayExpr':
        return { kind: 'Array', elements: this.exprs(body<{ elements?: Node[] }>(n, tag).elements) };
      case 'RowExpr': {
        const r = body<{ args?: Node[]; row_format?: string; colnames?: Node[] }>(n, tag);
        return { kind: 'Row', args: this.exprs(r.args), explicit: r.row_format === 'COERCE_EXPLICIT_CALL' };
      }
      case 'CoalesceExpr':
        return { kind: 'Coalesce', args: this.exprs(body<{ args?: Node[] }>(n, tag).args) };
      case 'MinMaxExpr': {
        const m = body<{ op?: string; args?: Node[] }>(n, tag);
        return { kind: 'MinMax', op: m.op === 'IS_LEAST' ? 'least' : 'greatest', args: this.exprs(m.args) };
      }
      case 'A_Indirection': {
        const ind = body<{ arg?: Node; indirection?: Node[] }>(n, tag);
        const subscripts: SubscriptEntry[] = (ind.indirection ?? EMPTY).map((x) => {
          const t = tagOf(x);
          if (t === 'A_Star') throw unimplemented('(expr).*');
          if (t !== 'A_Indices') throw unimplemented('field selection (expr).field');
          const ix = body<{ is_slice?: boolean; lidx?: Node; uidx?: Node }>(x, t);
          return { slice: ix.is_slice ?? false, lower: this.optExpr(ix.lidx), upper: this.optExpr(ix.uidx) };
        });
        return { kind: 'Subscript', arg: this.expr(req(ind.arg)), subscripts };
      }
      case 'CollateClause': {
        const c = body<{ arg?: Node; collname?: Node[] }>(n, tag);
        return { kind: 'Collate', arg: this.expr(req(c.arg)), collation: strs(c.collname) };
      }
      case 'SQLValueFunction': {
        const f = body<{ op?: string; typmod?: number }>(n, tag);
        const name = SVF_NAMES[f.op ?? ''];
        assert(name !== undefined, `parser: unknown SQLValueFunction ${f.op}`);
        // The _N forms carry a precision; a typmod of 0 is omitted from the JSON like every zero.
        const precision = f.op?.endsWith('_N') === true ? (f.typmod ?? 0) : undefined;
        return { kind: 'SqlValueFunction', name, precision };
      }
      case 'SetToDefault':
        return { kind: 'Default' };
      case 'GroupingFunc':
        throw unimplemented('GROUPING()');
      case 'XmlExpr':
      case 'XmlSerialize':
        throw unimplemented('XML functions');
      default:
        if (tag.startsWith('Json')) throw unimplemented('SQL/JSON functions');
        throw unimplemented(`expression ${tag}`);
    }
  }

  private noteParam(index: number, type: TypeName | undefined): void {
    if (index > this.maxParam) this.maxParam = index;
    if (type !== undefined) {
      if (this.paramTypes.get(index) === undefined) this.paramTypes.set(index, type);
    } else if (!this.paramTypes.has(index)) {
      this.paramTypes.set(index, undefined);
    }
  }

  private columnRef(c: PgColumnRef): Expr {
    const fields = c.fields ?? EMPTY;
    const names: string[] = [];
    let star = false;
    for (let i = 0; i < fields.length; i++) {
      const f = fields[i] as Node;
      if ((f as { A_Star?: unknown }).A_Star !== undefined) {
        assert(i === fields.length - 1, 'parser: star not last in a column reference');
        star = true;
      } else {
        names.push(str(f));
      }
    }
    return { kind: 'ColumnRef', names, star };
  }

  private aExpr(a: A_Expr): Expr {
    const opName = (): string => {
      const parts = strs(a.name);
      // OPERATOR(pg_catalog.op) (psql's backslash commands) is the built-in op.
      if (parts.length === 2 && parts[0] === 'pg_catalog') return parts[1] as string;
      if (parts.length !== 1) throw unimplemented('OPERATOR(schema.op)');
      return parts[0] as string;
    };
    switch (a.kind) {
      case 'AEXPR_OP': {
        const op = opName();
        if (a.lexpr === undefined) return { kind: 'UnaryOp', op, operand: this.expr(req(a.rexpr)) };
        if (a.rexpr === undefined) throw unimplemented('postfix operator');
        return { kind: 'BinaryOp', op, left: this.expr(a.lexpr), right: this.expr(a.rexpr) };
      }
      case 'AEXPR_OP_ANY':
      case 'AEXPR_OP_ALL':
        return { kind: 'ArrayOp', op: opName(), quantifier: a.kind === 'AEXPR_OP_ANY' ? 'any' : 'all', left: this.expr(req(a.lexpr)), right: this.expr(req(a.rexpr)) };
      case 'AEXPR_DISTINCT':
      case 'AEXPR_NOT_DISTINCT':
        return { kind: 'IsDistinctFrom', left: this.expr(req(a.lexpr)), right: this.expr(req(a.rexpr)), not: a.kind === 'AEXPR_NOT_DISTINCT' };
      case 'AEXPR_NULLIF':
        return { kind: 'NullIf', left: this.expr(req(a.lexpr)), right: this.expr(req(a.rexpr)) };
      case 'AEXPR_IN': {
        const list = body<{ items?: Node[] }>(req(a.rexpr), 'List');
        return { kind: 'InList', arg: this.expr(req(a.lexpr)), list: this.exprs(list?.items), not: opName() === '<>' };
      }
      case 'AEXPR_LIKE':
      case 'AEXPR_ILIKE': {
        const not = opName().startsWith('!');
        let pattern = this.expr(req(a.rexpr));
        let escape: Expr | undefined;
        // `x LIKE p ESCAPE e` arrives as like_escape(p, e).
        if (pattern.kind === 'FuncCall' && pattern.name.length === 1 && pattern.name[0] === 'like_escape' && pattern.args.length === 2) {
          escape = pattern.args[1];
          pattern = pattern.args[0] as Expr;
        }
        return { kind: 'Like', arg: this.expr(req(a.lexpr)), pattern, escape, caseInsensitive: a.kind === 'AEXPR_ILIKE', not };
      }
      case 'AEXPR_SIMILAR':
        throw unimplemented('SIMILAR TO');
      case 'AEXPR_BETWEEN':
      case 'AEXPR_NOT_BETWEEN':
      case 'AEXPR_BETWEEN_SYM':
      case 'AEXPR_NOT_BETWEEN_SYM': {
        const bounds = body<{ items?: Node[] }>(req(a.rexpr), 'List')?.items ?? EMPTY;
        assert(bounds.length === 2, 'parser: BETWEEN without two bounds');
        return {
          kind: 'Between',
          arg: this.expr(req(a.lexpr)),
          low: this.expr(bounds[0] as Node),
          high: this.expr(bounds[1] as Node),
          not: a.kind === 'AEXPR_NOT_BETWEEN' || a.kind === 'AEXPR_NOT_BETWEEN_SYM',
          symmetric: a.kind === 'AEXPR_BETWEEN_SYM' || a.kind === 'AEXPR_NOT_BETWEEN_SYM',
        };
      }
      default:
        throw unimplemented(`operator kind ${a.kind ?? 'unknown'}`);
    }
  }

  private funcCall(f: PgFuncCall): FuncCall {
    let name = strs(f.funcname);
    if (name.length > 1 && name[0] === 'pg_catalog') name = name.slice(1);
    if (f.agg_within_group === true) throw unimplemented('WITHIN GROUP');
    if (f.func_variadic === true) throw unimplemented('VARIADIC');
    for (const a of f.args ?? EMPTY) if (tagOf(a) === 'NamedArgExpr') throw unimplemented('named function arguments');
    return {
      kind: 'FuncCall',
      name,
      args: this.exprs(f.args),
      star: f.agg_star ?? false,
      distinct: f.agg_distinct ?? false,
      orderBy: this.sortList(f.agg_order),
      filter: this.optExpr(f.agg_filter),
      over: f.over === undefined ? undefined : this.windowDef(f.over, true),
    };
  }

  private subLink(s: PgSubLink): Expr {
    const query = this.select(body<SelectStmt>(req(s.subselect), 'SelectStmt'));
    const ops = strs(s.operName);
    if (ops.length > 1) throw unimplemented('OPERATOR(schema.op)');
    const op = ops[0];
    switch (s.subLinkType) {
      case 'EXISTS_SUBLINK':
        return { kind: 'SubLink', type: 'exists', test: undefined, op: undefined, query };
      case 'ANY_SUBLINK':
        return { kind: 'SubLink', type: op === undefined ? 'in' : 'any', test: this.expr(req(s.testexpr)), op, query };
      case 'ALL_SUBLINK':
        return { kind: 'SubLink', type: 'all', test: this.expr(req(s.testexpr)), op, query };
      case 'EXPR_SUBLINK':
        return { kind: 'SubLink', type: 'scalar', test: undefined, op: undefined, query };
      case 'ARRAY_SUBLINK':
        return { kind: 'SubLink', type: 'array', test: undefined, op: undefined, query };
      default:
        throw unimplemented(`subquery kind ${s.subLinkType ?? 'unknown'}`);
    }
  }
}

// ---------------------------------------------------------------------------
// Helpers without state

function req<T>(v: T | undefined): T {
  assert(v !== undefined, 'parser: missing node in libpg-query output');
  return v;
}

/** The value of an option (DefElem): a bare String/Integer/Float/Boolean node or a constant. */
function defElemValue(d: DefElem): string | number | boolean | undefined {
  const arg = d.arg;
  if (arg === undefined) return undefined;
  const t = tagOf(arg);
  switch (t) {
    case 'String':
      return body<{ sval?: string }>(arg, t).sval ?? '';
    case 'Integer':
      return body<{ ival?: number }>(arg, t).ival ?? 0;
    case 'Float':
      return body<{ fval?: string }>(arg, t).fval ?? '0';
    case 'Boolean':
      return body<{ boolval?: boolean }>(arg, t).boolval ?? false;
    case 'A_Const': {
      const c = constant(body<A_Const>(arg, t));
      return c.value ?? undefined;
    }
    default:
      throw unimplemented(`option ${d.defname ?? ''}`);
  }
}

const FK_ACTIONS: Readonly<Record<string, FkAction>> = { a: 'no action', r: 'restrict', c: 'cascade', n: 'set null', d: 'set default' };

function fkAction(code: string | undefined): FkAction {
  return FK_ACTIONS[code ?? 'a'] ?? 'no action';
}

/** A FOREIGN KEY / REFERENCES constraint; `columns` are the referencing columns. */
function foreignKey(k: Constraint, columns: readonly string[]): ForeignKeyConstraint {
  if (k.deferrable === true || k.initdeferred === true) throw unimplemented('DEFERRABLE constraints');
  if (k.fk_matchtype === 'p') throw unimplemented('MATCH PARTIAL');
  if (k.fk_del_set_cols !== undefined) throw unimplemented('ON DELETE SET NULL (columns)');
  return {
    kind: 'ForeignKey',
    name: k.conname,
    columns,
    table: tableName(onlyless(req(k.pktable), 'REFERENCES ONLY')),
    refColumns: strs(k.pk_attrs),
    match: k.fk_matchtype === 'f' ? 'full' : 'simple',
    onDelete: fkAction(k.fk_del_action),
    onUpdate: fkAction(k.fk_upd_action),
    notValid: k.skip_validation === true,
  };
}

function constraintName(t: string | undefined): string {
  switch (t) {
    case 'CONSTR_EXCLUSION':
      return 'EXCLUDE constraint';
    case 'CONSTR_IDENTITY':
      return 'GENERATED … AS IDENTITY';
    case 'CONSTR_GENERATED':
      return 'GENERATED ALWAYS AS (…) STORED';
    case 'CONSTR_ATTR_DEFERRABLE':
    case 'CONSTR_ATTR_NOT_DEFERRABLE':
    case 'CONSTR_ATTR_DEFERRED':
    case 'CONSTR_ATTR_IMMEDIATE':
      return 'DEFERRABLE constraints';
    default:
      return `constraint ${t ?? 'unknown'}`;
  }
}

/** `rv`, unless it is written with ONLY (inheritance is not a Cairn concept). */
function onlyless(rv: RangeVar, construct: string): RangeVar {
  if (rv.inh !== true) throw unimplemented(construct);
  return rv;
}

const RENAME_TARGETS: Readonly<Record<string, RenameStatement['target']>> = {
  OBJECT_TABLE: 'table',
  OBJECT_COLUMN: 'column',
  OBJECT_TABCONSTRAINT: 'constraint',
  OBJECT_INDEX: 'index',
  OBJECT_VIEW: 'view',
  OBJECT_SEQUENCE: 'sequence',
  OBJECT_DATABASE: 'database',
};

function rename(r: RenameStmt): Statement {
  const target = RENAME_TARGETS[r.renameType ?? ''];
  if (target === undefined) throw unimplemented(`ALTER ${(r.renameType ?? 'OBJECT_UNKNOWN').slice('OBJECT_'.length).replace(/_/g, ' ')} … RENAME`);
  if (target === 'column' && r.relationType !== 'OBJECT_TABLE') throw unimplemented('RENAME COLUMN of a view');
  const ifExists = r.missing_ok ?? false;
  if (target === 'database') return { kind: 'Rename', target, object: { name: r.subname ?? '' }, from: undefined, to: r.newname ?? '', ifExists };
  const rel = tableName(onlyless(req(r.relation), 'ALTER … ONLY'));
  return { kind: 'Rename', target, object: rel, from: target === 'column' || target === 'constraint' ? r.subname : undefined, to: r.newname ?? '', ifExists };
}

const SEQUENCE_OPTIONS: ReadonlySet<string> = new Set(['increment', 'minvalue', 'maxvalue', 'start', 'cache', 'cycle']);

function createSequence(s: CreateSeqStmt): Statement {
  const seq = req(s.sequence);
  if (seq.relpersistence === 't') throw unimplemented('CREATE TEMPORARY SEQUENCE');
  const options = (s.options ?? EMPTY).map((o) => {
    const d = body<DefElem>(o, 'DefElem');
    const name = d.defname ?? '';
    if (!SEQUENCE_OPTIONS.has(name)) throw unimplemented(`sequence option ${name.toUpperCase().replace(/_/g, ' ')}`);
    const v = defElemValue(d);
    return { name, value: typeof v === 'number' ? String(v) : v };
  });
  return { kind: 'CreateSequence', sequence: tableName(seq), ifNotExists: s.if_not_exists ?? false, options };
}

export function tableName(rv: RangeVar): TableName {
  return { name: rv.relname ?? '', schema: rv.schemaname, catalog: rv.catalogname };
}

/** `[catalog.][schema.]name` from dotted parts (DROP's object lists). */
export function nameFromParts(parts: readonly string[]): TableName {
  if (parts.length === 0 || parts.length > 3) throw unimplemented(`name with ${parts.length} parts`);
  const n = parts.length;
  return { name: parts[n - 1] as string, schema: n >= 2 ? parts[n - 2] : undefined, catalog: n === 3 ? parts[0] : undefined };
}

/** Scalar functions a FROM clause may call (each yields one row, one column). */
/** The ordinality column of `f(…) WITH ORDINALITY`: the row's position in the function's output. */
const ORDINALITY: Expr = { kind: 'FuncCall', name: ['row_number'], args: [], star: false, distinct: false, orderBy: [], filter: undefined, over: { refName: undefined, partitionBy: [], orderBy: [], frame: undefined } };
const SET_RETURNING_FROM_FUNCTIONS: ReadonlySet<string> = new Set(['generate_series', 'unnest', 'pg_partition_ancestors']);
const SCALAR_FROM_FUNCTIONS: ReadonlySet<string> = new Set(['current_schema', 'current_database', 'current_user', 'session_user', 'version', 'current_setting', 'pg_backend_pid']);

function alias(a: PgAlias | undefined): Alias | undefined {
  if (a === undefined) return undefined;
  return { name: a.aliasname ?? '', columns: strs(a.colnames) };
}

export function constant(c: A_Const): Const {
  if (c.isnull === true) return { kind: 'Const', type: 'null', value: null, text: 'NULL' };
  if (c.ival !== undefined) {
    const v = c.ival.ival ?? 0;
    return { kind: 'Const', type: 'int', value: v, text: String(v) };
  }
  if (c.fval !== undefined) return numberConst(c.fval.fval ?? '0');
  if (c.sval !== undefined) {
    const s = c.sval.sval ?? '';
    return { kind: 'Const', type: 'string', value: s, text: s };
  }
  if (c.boolval !== undefined) {
    const b = c.boolval.boolval ?? false;
    return { kind: 'Const', type: 'bool', value: b, text: b ? 'true' : 'false' };
  }
  if (c.bsval !== undefined) {
    const s = c.bsval.bsval ?? '';
    return { kind: 'Const', type: 'bitstring', value: s, text: s };
  }
  // An A_Const with no value field is an integer 0 whose field was omitted.
  return { kind: 'Const', type: 'int', value: 0, text: '0' };
}

/**
 * A number literal PostgreSQL kept as text (too big for int4, or not an
 * integer), normalised: underscores dropped, hex/octal/binary integers in
 * decimal, so `int` text is always `-?\d+` and `numeric` text a decimal.
 */
function numberConst(raw: string): Const {
  const neg = raw.startsWith('-');
  const digits = (neg ? raw.slice(1) : raw).replace(/_/g, '');
  const sign = neg ? '-' : '';
  if (/^(\d+|0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+)$/.test(digits)) {
    const text = sign + BigInt(digits).toString();
    return { kind: 'Const', type: 'int', value: Number(text), text };
  }
  const text = sign + digits;
  return { kind: 'Const', type: 'numeric', value: Number(text), text };
}

/** Normalises a PostgreSQL TypeName (see TypeName in ast.ts). */
export function typeName(t: PgTypeName): TypeName {
  if (t.setof === true) throw unimplemented('SETOF');
  if (t.pct_type === true) throw unimplemented('%TYPE');
  let parts = strs(t.names);
  if (parts.length > 1 && parts[0] === 'pg_catalog') parts = parts.slice(1);
  const raw = parts.join('.');
  const name = TYPE_ALIASES.get(raw) ?? raw;
  const mods: number[] = [];
  for (const m of t.typmods ?? EMPTY) {
    const c = (m as { A_Const?: A_Const }).A_Const;
    if (c === undefined || c.isnull === true || c.sval !== undefined || c.fval !== undefined || c.boolval !== undefined || c.bsval !== undefined) {
      throw unimplemented(`type modifier on ${name}`);
    }
    mods.push(c.ival?.ival ?? 0);
  }
  if (name === 'interval' && mods.length > 0) throw unimplemented('interval fields or precision');
  return { name, mods, arrayDims: t.arrayBounds?.length ?? 0 };
}

/**
 * Cairn's SQL abstract syntax tree: the contract between the parser and the
 * planner/executor.
 *
 * Shape:
 *   - Every node is a `readonly` object with a string `kind` tag; `Statement`
 *     and `Expr` are closed unions over those tags, so a `switch (n.kind)`
 *     ending in `assertNever(n)` is exhaustive (walk.ts, format.ts do that).
 *   - Nodes are immutable and may be shared (the statement cache hands the
 *     same tree to many sessions). Rewrites build new nodes (`mapExpr`).
 *   - Optional children are `undefined` when absent; lists are always present
 *     (possibly empty), so consumers never test for both.
 *   - Identifiers are already case-folded the PostgreSQL way (unquoted →
 *     lower case, quoted → verbatim). Names are never re-quoted in the AST;
 *     format.ts quotes them when printing.
 *   - Nodes carry no source positions: the statement's text span is kept on
 *     `ParsedStatement` (parse.ts). Errors raised while planning are reported
 *     without a position.
 *
 * Semantics follow PostgreSQL: `int`/`integer` is int4, `bigint` int8, an
 * integer literal is typed by the planner (int4/int8/numeric by magnitude),
 * `'…'` literals are untyped strings, `$n` parameters are 1-based.
 * Cairn's own statements (UPSERT, SHOW RANGES, SPLIT AT, CONFIGURE ZONE,
 * AS OF SYSTEM TIME, cluster settings) have nodes of their own below; see
 * cairn-statements.ts for their grammar.
 *
 * What the planner cannot run yet it rejects with 0A000; the parser only
 * rejects what this AST cannot express (convert.ts raises
 * `unimplemented: <construct>`).
 *
 * Ownership: sql/parser. Planner, executor, catalog and pgwire read it.
 */

// ---------------------------------------------------------------------------
// Names and types

/** A possibly qualified relation name: `[catalog.][schema.]name`. */
export interface TableName {
  readonly name: string;
  readonly schema?: string | undefined;
  readonly catalog?: string | undefined;
}

/**
 * A type name, normalised to PostgreSQL's canonical internal names:
 *   bool int2 int4 int8 float4 float8 numeric text varchar char bytea date
 *   time timetz timestamp timestamptz interval uuid json jsonb oid name …
 * (`integer` → int4, `bigint` → int8, `real` → float4, `double precision` →
 * float8, `decimal` → numeric, `character varying` → varchar, `character` /
 * `bpchar` → char, `timestamp with time zone` → timestamptz, `boolean` →
 * bool, CockroachDB's `string` → text). Unknown names are kept as written
 * (case-folded like any name; schema-qualified names joined with '.') for
 * the planner to resolve or reject.
 *
 * `mods` are the type modifiers as written: varchar(n) → [n], char(n) → [n]
 * (bare `char` is char(1)), numeric(p, s) → [p, s], timestamp(p) → [p].
 * `arrayDims` counts `[]` suffixes: `int[]` is int4 with arrayDims 1.
 */
export interface TypeName {
  readonly name: string;
  readonly mods: readonly number[];
  readonly arrayDims: number;
}

// ---------------------------------------------------------------------------
// Expressions

export type Expr =
  | ColumnRef
  | Const
  | Param
  | BinaryOp
  | UnaryOp
  | BoolExpr
  | FuncCall
  | Cast
  | CaseExpr
  | NullTest
  | BooleanTest
  | IsDistinctFrom
  | InList
  | Between
  | Like
  | SubLink
  | ArrayOp
  | ArrayExpr
  | RowExpr
  | Coalesce
  | NullIf
  | MinMax
  | Subscript
  | Collate
  | SqlValueFunction
  | DefaultExpr;

/**
 * A column reference `a`, `t.a`, `db.t.a`, or a star: `*` (names = [],
 * star) and `t.*` (names = ['t'], star).
 */
export interface ColumnRef {
  readonly kind: 'ColumnRef';
  readonly names: readonly string[];
  readonly star: boolean;
}

/**
 * A literal. `text` keeps a number's exact digits ("1.50",
 * "99999999999999999999"), normalised only where that loses nothing
 * (underscores dropped, 0x/0o/0b integers in decimal):
 *   - int:       an integer of any size: `-?\d+` ("42", "-7", "1000000");
 *                `value` is the JS number (exact only up to 2^53). The
 *                planner types it int4/int8/numeric by magnitude.
 *   - numeric:   a decimal point and/or exponent ("1.50", "1e10", ".5");
 *                `value` is the JS number (approximate).
 *   - string:    an untyped '…' literal (E'', $$…$$ and U&'' already
 *                decoded); `value` equals `text`.
 *   - bitstring: B'0101' → text "b0101", X'ff' → text "xff".
 *   - bool:      TRUE/FALSE; text "true"/"false".
 *   - null:      NULL; text "NULL", value null.
 */
export interface Const {
  readonly kind: 'Const';
  readonly type: 'int' | 'numeric' | 'string' | 'bitstring' | 'bool' | 'null';
  readonly value: string | number | boolean | null;
  readonly text: string;
}

/** A placeholder `$index` (1-based), described to clients by pgwire. */
export interface Param {
  readonly kind: 'Param';
  readonly index: number;
}

/**
 * A binary operator, as PostgreSQL spells it: + - * / % ^ = <> < <= > >= ||
 * and any other symbolic operator (->, ->>, @>, <@, ~, …). `!=` arrives as
 * `<>`. Qualified `OPERATOR(schema.op)` forms are not supported.
 */
export interface BinaryOp {
  readonly kind: 'BinaryOp';
  readonly op: string;
  readonly left: Expr;
  readonly right: Expr;
}

/** A prefix operator: `-x`, `+x`, `~x`, `@x`, … (`NOT` is a BoolExpr). */
export interface UnaryOp {
  readonly kind: 'UnaryOp';
  readonly op: string;
  readonly operand: Expr;
}

/** AND / OR over two or more args (flattened as PostgreSQL does), NOT over one. */
export interface BoolExpr {
  readonly kind: 'BoolExpr';
  readonly op: 'and' | 'or' | 'not';
  readonly args: readonly Expr[];
}

/**
 * A function call, aggregate or window function.
 *   name:     case-folded like any name, possibly schema-qualified; a leading `pg_catalog`
 *             is dropped (`extract(year from x)` arrives as
 *             `extract('year', x)`).
 *   star:     `count(*)`; args is then empty.
 *   distinct: `count(DISTINCT x)`.
 *   orderBy:  `string_agg(x, ',' ORDER BY y)`.
 *   filter:   `FILTER (WHERE …)`.
 *   over:     present for window calls: `OVER (…)` or `OVER w`.
 */
export interface FuncCall {
  readonly kind: 'FuncCall';
  readonly name: readonly string[];
  readonly args: readonly Expr[];
  readonly star: boolean;
  readonly distinct: boolean;
  readonly orderBy: readonly SortBy[];
  readonly filter: Expr | undefined;
  readonly over: WindowDef | undefined;
}

/** `CAST(arg AS type)`, `arg::type` and typed literals (`DATE '2020-01-01'`). */
export interface Cast {
  readonly kind: 'Cast';
  readonly arg: Expr;
  readonly type: TypeName;
}

/** `CASE [operand] WHEN … THEN … [ELSE …] END`. */
export interface CaseExpr {
  readonly kind: 'Case';
  readonly operand: Expr | undefined;
  readonly whens: readonly CaseWhen[];
  readonly else: Expr | undefined;
}

export interface CaseWhen {
  readonly when: Expr;
  readonly then: Expr;
}

/** `arg IS [NOT] NULL`. */
export interface NullTest {
  readonly kind: 'NullTest';
  readonly arg: Expr;
  readonly not: boolean;
}

/** `arg IS [NOT] TRUE | FALSE | UNKNOWN`. */
export interface BooleanTest {
  readonly kind: 'BooleanTest';
  readonly arg: Expr;
  readonly test: 'true' | 'false' | 'unknown';
  readonly not: boolean;
}

/** `left IS [NOT] DISTINCT FROM right`. */
export interface IsDistinctFrom {
  readonly kind: 'IsDistinctFrom';
  readonly left: Expr;
  readonly right: Expr;
  readonly not: boolean;
}

/** `arg [NOT] IN (e1, e2, …)`; the subquery form is a SubLink. */
export interface InList {
  readonly kind: 'InList';
  readonly arg: Expr;
  readonly list: readonly Expr[];
  readonly not: boolean;
}

/** `arg [NOT] BETWEEN [SYMMETRIC] low AND high`. */
export interface Between {
  readonly kind: 'Between';
  readonly arg: Expr;
  readonly low: Expr;
  readonly high: Expr;
  readonly not: boolean;
  readonly symmetric: boolean;
}

/** `arg [NOT] LIKE|ILIKE pattern [ESCAPE escape]`. */
export interface Like {
  readonly kind: 'Like';
  readonly arg: Expr;
  readonly pattern: Expr;
  readonly escape: Expr | undefined;
  readonly caseInsensitive: boolean;
  readonly not: boolean;
}

/**
 * A subquery used as an expression:
 *   exists:  `EXISTS (q)`
 *   in:      `test IN (q)`                (NOT IN is BoolExpr not over this)
 *   any/all: `test op ANY|ALL (q)`        (op is the comparison operator)
 *   scalar:  `(q)` yielding one value
 *   array:   `ARRAY(q)`
 */
export interface SubLink {
  readonly kind: 'SubLink';
  readonly type: 'exists' | 'in' | 'any' | 'all' | 'scalar' | 'array';
  readonly test: Expr | undefined;
  readonly op: string | undefined;
  readonly query: SelectStatement;
}

/**
 * `left op ANY|SOME (array)` / `left op ALL (array)` over an array value
 * (PostgreSQL's ScalarArrayOpExpr), e.g. `id = ANY($1)`. The subquery forms
 * are SubLinks.
 */
export interface ArrayOp {
  readonly kind: 'ArrayOp';
  readonly op: string;
  readonly quantifier: 'any' | 'all';
  readonly left: Expr;
  readonly right: Expr;
}

/** `ARRAY[e1, e2, …]`. */
export interface ArrayExpr {
  readonly kind: 'Array';
  readonly elements: readonly Expr[];
}

/** `ROW(a, b)` (explicit) or `(a, b)` (implicit). */
export interface RowExpr {
  readonly kind: 'Row';
  readonly args: readonly Expr[];
  readonly explicit: boolean;
}

/** `COALESCE(a, b, …)`. */
export interface Coalesce {
  readonly kind: 'Coalesce';
  readonly args: readonly Expr[];
}

/** `NULLIF(left, right)`. */
export interface NullIf {
  readonly kind: 'NullIf';
  readonly left: Expr;
  readonly right: Expr;
}

/** `GREATEST(…)` / `LEAST(…)`. */
export interface MinMax {
  readonly kind: 'MinMax';
  readonly op: 'greatest' | 'least';
  readonly args: readonly Expr[];
}

/** `arg[i]`, `arg[lo:hi]` (array subscripts, one entry per bracket). */
export interface Subscript {
  readonly kind: 'Subscript';
  readonly arg: Expr;
  readonly subscripts: readonly SubscriptEntry[];
}

export interface SubscriptEntry {
  readonly slice: boolean;
  /** The lower bound of a slice; undefined for a plain index or an open lower bound. */
  readonly lower: Expr | undefined;
  /** The index, or the upper bound of a slice (undefined when open). */
  readonly upper: Expr | undefined;
}

/** `arg COLLATE "name"`. */
export interface Collate {
  readonly kind: 'Collate';
  readonly arg: Expr;
  readonly collation: readonly string[];
}

/**
 * The SQL-standard niladic functions that are keywords, not calls:
 * CURRENT_DATE, CURRENT_TIME[(p)], CURRENT_TIMESTAMP[(p)], LOCALTIME[(p)],
 * LOCALTIMESTAMP[(p)], CURRENT_ROLE, CURRENT_USER, USER, SESSION_USER,
 * CURRENT_CATALOG, CURRENT_SCHEMA.
 */
export interface SqlValueFunction {
  readonly kind: 'SqlValueFunction';
  readonly name: SqlValueFunctionName;
  readonly precision: number | undefined;
}

export type SqlValueFunctionName =
  | 'current_date'
  | 'current_time'
  | 'current_timestamp'
  | 'localtime'
  | 'localtimestamp'
  | 'current_role'
  | 'current_user'
  | 'user'
  | 'session_user'
  | 'current_catalog'
  | 'current_schema';

/** The `DEFAULT` keyword in an INSERT VALUES row or an UPDATE SET. */
export interface DefaultExpr {
  readonly kind: 'Default';
}

// ---------------------------------------------------------------------------
// Parts of queries

/** `expr [ASC|DESC] [NULLS FIRST|LAST]`. */
export interface SortBy {
  readonly expr: Expr;
  readonly dir: 'default' | 'asc' | 'desc';
  readonly nulls: 'default' | 'first' | 'last';
}

/**
 * A window: `OVER name`, `OVER (name …)` or `OVER (PARTITION BY … ORDER BY …
 * frame)`. `refName` names a window of the WINDOW clause to inherit from.
 */
export interface WindowDef {
  readonly refName: string | undefined;
  readonly partitionBy: readonly Expr[];
  readonly orderBy: readonly SortBy[];
  readonly frame: WindowFrame | undefined;
}

/** `ROWS|RANGE|GROUPS [BETWEEN] start [AND end] [EXCLUDE …]`. */
export interface WindowFrame {
  readonly mode: 'rows' | 'range' | 'groups';
  readonly start: FrameBound;
  /** Undefined when written without BETWEEN (the end is CURRENT ROW). */
  readonly end: FrameBound | undefined;
  readonly exclude: 'no others' | 'current row' | 'group' | 'ties';
}

export type FrameBound =
  | { readonly kind: 'unbounded preceding' }
  | { readonly kind: 'unbounded following' }
  | { readonly kind: 'current row' }
  | { readonly kind: 'preceding'; readonly offset: Expr }
  | { readonly kind: 'following'; readonly offset: Expr };

/** A select-list or RETURNING entry: `expr [AS alias]` (star: ColumnRef with star). */
export interface SelectTarget {
  readonly expr: Expr;
  readonly alias: string | undefined;
}

/** `AS name [(col, …)]` on a FROM item. */
export interface Alias {
  readonly name: string;
  readonly columns: readonly string[];
}

/** A FROM item. */
export type TableExpr = TableRef | SubqueryRef | JoinExpr;

/** A named table (or view / CTE reference). */
export interface TableRef {
  readonly kind: 'TableRef';
  readonly table: TableName;
  readonly alias: Alias | undefined;
}

/** `[LATERAL] (SELECT …) [AS] alias`. */
export interface SubqueryRef {
  readonly kind: 'SubqueryRef';
  readonly query: SelectStatement;
  readonly alias: Alias | undefined;
  readonly lateral: boolean;
}

/**
 * `left [NATURAL] {INNER|LEFT|RIGHT|FULL} JOIN right {ON cond | USING (cols)}`
 * or `left CROSS JOIN right` (type 'cross'; a comma in FROM is two items, not
 * a join). `alias` is `(a JOIN b) AS j`.
 */
export interface JoinExpr {
  readonly kind: 'Join';
  readonly type: 'inner' | 'left' | 'right' | 'full' | 'cross';
  readonly left: TableExpr;
  readonly right: TableExpr;
  readonly natural: boolean;
  readonly on: Expr | undefined;
  readonly using: readonly string[];
  readonly alias: Alias | undefined;
}

/** `WITH [RECURSIVE] name [(cols)] AS [NOT] [MATERIALIZED] (query), …`. */
export interface WithClause {
  readonly recursive: boolean;
  readonly ctes: readonly CommonTableExpr[];
}

export interface CommonTableExpr {
  readonly name: string;
  readonly columns: readonly string[];
  readonly materialized: 'default' | 'always' | 'never';
  readonly query: Statement;
}

/** `FOR UPDATE | NO KEY UPDATE | SHARE | KEY SHARE [OF t, …] [NOWAIT | SKIP LOCKED]`. */
export interface LockingClause {
  readonly strength: 'update' | 'no key update' | 'share' | 'key share';
  readonly of: readonly TableName[];
  readonly wait: 'block' | 'nowait' | 'skip locked';
}

/** `WINDOW name AS (…)` entry. */
export interface NamedWindow {
  readonly name: string;
  readonly def: WindowDef;
}

// ---------------------------------------------------------------------------
// SELECT

/**
 * A complete query: the body plus what applies to the whole of it.
 *
 *   SELECT … FROM … WHERE … ORDER BY … LIMIT … OFFSET … FOR UPDATE
 *   └──────────── body ────────────┘ └─ orderBy, limit, offset, locking ─┘
 *
 * `asOfSystemTime` is Cairn's `AS OF SYSTEM TIME expr` (a historical read).
 * `limit` undefined means no limit (`LIMIT ALL` too).
 */
export interface SelectStatement {
  readonly kind: 'Select';
  readonly with: WithClause | undefined;
  readonly body: SelectBody;
  readonly orderBy: readonly SortBy[];
  readonly limit: Expr | undefined;
  readonly offset: Expr | undefined;
  readonly locking: readonly LockingClause[];
  readonly asOfSystemTime: Expr | undefined;
}

/**
 * What produces the rows: a SELECT clause, a VALUES list, a set operation, or
 * a parenthesised complete query (which may carry its own ORDER BY / LIMIT).
 */
export type SelectBody = SelectClause | ValuesClause | SetOperation | SelectStatement;

/**
 * `SELECT [DISTINCT [ON (…)]] targets FROM … WHERE … GROUP BY … HAVING …
 * WINDOW …`. distinct: false (ALL), true (DISTINCT) or the DISTINCT ON list.
 * `from` lists comma-separated items (an implicit cross join).
 */
export interface SelectClause {
  readonly kind: 'SelectClause';
  readonly distinct: boolean | readonly Expr[];
  readonly targets: readonly SelectTarget[];
  readonly from: readonly TableExpr[];
  readonly where: Expr | undefined;
  readonly groupBy: readonly Expr[];
  readonly having: Expr | undefined;
  readonly windows: readonly NamedWindow[];
}

/** `VALUES (…), (…)`: every row has the same length. */
export interface ValuesClause {
  readonly kind: 'Values';
  readonly rows: readonly (readonly Expr[])[];
}

/** `left UNION|INTERSECT|EXCEPT [ALL] right`. */
export interface SetOperation {
  readonly kind: 'SetOp';
  readonly op: 'union' | 'intersect' | 'except';
  readonly all: boolean;
  readonly left: SelectBody;
  readonly right: SelectBody;
}

// ---------------------------------------------------------------------------
// Data modification

/** `column = value` in UPDATE SET / ON CONFLICT DO UPDATE SET (value may be Default). */
export interface SetClause {
  readonly column: string;
  readonly value: Expr;
}

/**
 * INSERT or UPSERT.
 *   source:     the rows (a VALUES list or any query); undefined for
 *               `DEFAULT VALUES`.
 *   upsert:     Cairn's `UPSERT INTO`: insert, or overwrite the row with the
 *               same primary key (no ON CONFLICT allowed with it).
 *   onConflict: `ON CONFLICT [(cols) [WHERE …] | ON CONSTRAINT c] DO NOTHING |
 *               DO UPDATE SET … [WHERE …]`.
 */
export interface InsertStatement {
  readonly kind: 'Insert';
  readonly with: WithClause | undefined;
  readonly table: TableName;
  readonly alias: string | undefined;
  readonly columns: readonly string[];
  readonly source: SelectStatement | undefined;
  readonly upsert: boolean;
  readonly onConflict: OnConflict | undefined;
  readonly returning: readonly SelectTarget[];
}

export interface OnConflict {
  /** Conflict target columns; empty when none was given or `constraint` is set. */
  readonly columns: readonly string[];
  /** `ON CONFLICT (…) WHERE pred` (partial-index inference). */
  readonly where: Expr | undefined;
  readonly constraint: string | undefined;
  readonly action: { readonly kind: 'nothing' } | { readonly kind: 'update'; readonly set: readonly SetClause[]; readonly where: Expr | undefined };
}

/** `UPDATE t [AS a] SET … [FROM …] [WHERE …] [RETURNING …]`. */
export interface UpdateStatement {
  readonly kind: 'Update';
  readonly with: WithClause | undefined;
  readonly table: TableName;
  readonly alias: string | undefined;
  readonly set: readonly SetClause[];
  readonly from: readonly TableExpr[];
  readonly where: Expr | undefined;
  readonly returning: readonly SelectTarget[];
}

/** `DELETE FROM t [AS a] [USING …] [WHERE …] [RETURNING …]`. */
export interface DeleteStatement {
  readonly kind: 'Delete';
  readonly with: WithClause | undefined;
  readonly table: TableName;
  readonly alias: string | undefined;
  readonly using: readonly TableExpr[];
  readonly where: Expr | undefined;
  readonly returning: readonly SelectTarget[];
}

// ---------------------------------------------------------------------------
// Schema

/**
 * A column definition. Column constraints are folded into fields:
 *   serial:     SMALLSERIAL/SERIAL/BIGSERIAL; `type` is then int2/int4/int8
 *               and the planner makes the column NOT NULL with a sequence
 *               (or unique_rowid) default; `default` is only what was
 *               written (normally undefined; PostgreSQL rejects both).
 *   notNull:    NOT NULL was written (PRIMARY KEY columns are NOT NULL too,
 *               which the planner derives).
 *   nullable:   NULL was written explicitly.
 *   collation:  `COLLATE "name"` (possibly schema-qualified), else undefined.
 */
export interface ColumnDef {
  readonly name: string;
  readonly type: TypeName;
  readonly serial: 'smallserial' | 'serial' | 'bigserial' | undefined;
  readonly notNull: boolean;
  readonly nullable: boolean;
  readonly default: Expr | undefined;
  readonly primaryKey: boolean;
  readonly unique: boolean;
  readonly checks: readonly CheckConstraint[];
  readonly collation: readonly string[] | undefined;
  /** Inline `[CONSTRAINT name] REFERENCES t [(col)] …` (column list empty: the referenced PK). */
  readonly references?: readonly ForeignKeyConstraint[];
}

/** A foreign key's referential action (PostgreSQL's ON DELETE / ON UPDATE). */
export type FkAction = 'no action' | 'restrict' | 'cascade' | 'set null' | 'set default';

/**
 * `[CONSTRAINT name] FOREIGN KEY (columns) REFERENCES table [(refColumns)]
 * [MATCH SIMPLE|FULL] [ON DELETE a] [ON UPDATE a] [NOT VALID]`. Inline
 * REFERENCES has `columns` = [its column]; empty `refColumns` means the
 * referenced table's primary key.
 */
export interface ForeignKeyConstraint {
  readonly kind: 'ForeignKey';
  readonly name: string | undefined;
  readonly columns: readonly string[];
  readonly table: TableName;
  readonly refColumns: readonly string[];
  readonly match: 'simple' | 'full';
  readonly onDelete: FkAction;
  readonly onUpdate: FkAction;
  readonly notValid: boolean;
}

export interface CheckConstraint {
  readonly name: string | undefined;
  readonly expr: Expr;
}

/** Table-level constraints of CREATE TABLE. */
export type TableConstraint =
  | { readonly kind: 'PrimaryKey'; readonly name: string | undefined; readonly columns: readonly string[] }
  | { readonly kind: 'Unique'; readonly name: string | undefined; readonly columns: readonly string[] }
  | { readonly kind: 'Check'; readonly name: string | undefined; readonly expr: Expr }
  | ForeignKeyConstraint;

export interface CreateTableStatement {
  readonly kind: 'CreateTable';
  readonly table: TableName;
  readonly ifNotExists: boolean;
  readonly columns: readonly ColumnDef[];
  readonly constraints: readonly TableConstraint[];
}

export interface DropTableStatement {
  readonly kind: 'DropTable';
  readonly tables: readonly TableName[];
  readonly ifExists: boolean;
  readonly cascade: boolean;
}

/** An index key column: a column name or an expression, with its ordering. */
export interface IndexElem {
  readonly column: string | undefined;
  readonly expr: Expr | undefined;
  readonly dir: 'default' | 'asc' | 'desc';
  readonly nulls: 'default' | 'first' | 'last';
}

/**
 * `CREATE [UNIQUE] INDEX [IF NOT EXISTS] [name] ON t (cols) [INCLUDE (cols)]
 * [WHERE pred]` (issue 7). CockroachDB's `STORING (cols)` is accepted as a
 * synonym of INCLUDE (cairn-statements.ts) and lands in `storing` too.
 */
export interface CreateIndexStatement {
  readonly kind: 'CreateIndex';
  readonly name: string | undefined;
  readonly table: TableName;
  readonly unique: boolean;
  readonly ifNotExists: boolean;
  readonly columns: readonly IndexElem[];
  readonly storing: readonly string[];
  readonly where: Expr | undefined;
}

/**
 * An index named PostgreSQL's way (`[schema.]index`: `table` undefined,
 * `index.schema` maybe set) or CockroachDB's (`table@index`: `table` set).
 */
export interface IndexName {
  readonly table: TableName | undefined;
  readonly index: TableName;
}

/** `DROP INDEX [IF EXISTS] name | table@name, … [CASCADE]` (issue 7). */
export interface DropIndexStatement {
  readonly kind: 'DropIndex';
  readonly indexes: readonly IndexName[];
  readonly ifExists: boolean;
  readonly cascade: boolean;
}

/**
 * `ALTER TABLE [IF EXISTS] t cmd, …` (issue 7). Cairn's `SPLIT AT` and
 * `CONFIGURE ZONE` forms are statements of their own (SplitAt, ConfigureZone).
 */
export interface AlterTableStatement {
  readonly kind: 'AlterTable';
  readonly table: TableName;
  readonly ifExists: boolean;
  readonly commands: readonly AlterTableCmd[];
}

/**
 * One ALTER TABLE action:
 *   AddColumn        ADD [COLUMN] [IF NOT EXISTS] coldef
 *   DropColumn       DROP [COLUMN] [IF EXISTS] c [CASCADE]
 *   SetDefault       ALTER [COLUMN] c SET DEFAULT e | DROP DEFAULT (default undefined)
 *   SetNotNull       ALTER [COLUMN] c SET NOT NULL (notNull) | DROP NOT NULL
 *   AlterColumnType  ALTER [COLUMN] c [SET DATA] TYPE t [USING e]
 *   AddConstraint    ADD [CONSTRAINT name] PRIMARY KEY | UNIQUE | CHECK …
 *   DropConstraint   DROP CONSTRAINT [IF EXISTS] name [CASCADE]
 *   ValidateConstraint  VALIDATE CONSTRAINT name (a NOT VALID foreign key)
 */
export type AlterTableCmd =
  | { readonly kind: 'AddColumn'; readonly column: ColumnDef; readonly ifNotExists: boolean }
  | { readonly kind: 'DropColumn'; readonly column: string; readonly ifExists: boolean; readonly cascade: boolean }
  | { readonly kind: 'SetDefault'; readonly column: string; readonly default: Expr | undefined }
  | { readonly kind: 'SetNotNull'; readonly column: string; readonly notNull: boolean }
  | { readonly kind: 'AlterColumnType'; readonly column: string; readonly type: TypeName; readonly using: Expr | undefined }
  | { readonly kind: 'AddConstraint'; readonly constraint: TableConstraint }
  | { readonly kind: 'DropConstraint'; readonly name: string; readonly ifExists: boolean; readonly cascade: boolean }
  | { readonly kind: 'ValidateConstraint'; readonly name: string };

/**
 * `ALTER TABLE|INDEX|VIEW|SEQUENCE [IF EXISTS] x RENAME TO y`,
 * `ALTER TABLE t RENAME [COLUMN] a TO b`, `ALTER TABLE t RENAME CONSTRAINT a
 * TO b`, `ALTER DATABASE d RENAME TO e` (issue 7). `object` is the relation
 * (or the database as `{ name }`); `from` names the column or constraint.
 */
export interface RenameStatement {
  readonly kind: 'Rename';
  readonly target: 'table' | 'column' | 'constraint' | 'index' | 'view' | 'sequence' | 'database';
  readonly object: TableName;
  readonly from: string | undefined;
  readonly to: string;
  readonly ifExists: boolean;
}

/** `CREATE [OR REPLACE] VIEW v [(cols)] AS query` (issue 7). */
export interface CreateViewStatement {
  readonly kind: 'CreateView';
  readonly view: TableName;
  readonly columns: readonly string[];
  readonly query: SelectStatement;
  readonly orReplace: boolean;
}

/** `DROP VIEW [IF EXISTS] v, … [CASCADE]`. */
export interface DropViewStatement {
  readonly kind: 'DropView';
  readonly views: readonly TableName[];
  readonly ifExists: boolean;
  readonly cascade: boolean;
}

/**
 * `CREATE SEQUENCE [IF NOT EXISTS] s [INCREMENT [BY] n] [MINVALUE n | NO
 * MINVALUE] [MAXVALUE n | NO MAXVALUE] [START [WITH] n] [CACHE n] [[NO] CYCLE]`
 * (issue 7). Options keep PostgreSQL's names (increment, minvalue, maxvalue,
 * start, cache, cycle); value is the number's text, a boolean for cycle, or
 * undefined for NO MINVALUE / NO MAXVALUE.
 */
export interface CreateSequenceStatement {
  readonly kind: 'CreateSequence';
  readonly sequence: TableName;
  readonly ifNotExists: boolean;
  readonly options: readonly { readonly name: string; readonly value: string | boolean | undefined }[];
}

/** `DROP SEQUENCE [IF EXISTS] s, … [CASCADE]`. */
export interface DropSequenceStatement {
  readonly kind: 'DropSequence';
  readonly sequences: readonly TableName[];
  readonly ifExists: boolean;
  readonly cascade: boolean;
}

/** `TRUNCATE [TABLE] t, … [RESTART IDENTITY] [CASCADE]` (issue 7). */
export interface TruncateStatement {
  readonly kind: 'Truncate';
  readonly tables: readonly TableName[];
  readonly restartIdentity: boolean;
  readonly cascade: boolean;
}

/**
 * `COPY t [(cols)] FROM STDIN | TO STDOUT [WITH (opts)]`, `COPY (query) TO
 * STDOUT` (issue 7). Only the client streams are supported (no server files
 * or programs). Option names are lower-cased; value undefined means "on".
 */
export interface CopyStatement {
  readonly kind: 'Copy';
  readonly table: TableName | undefined;
  readonly columns: readonly string[];
  readonly query: Statement | undefined;
  readonly direction: 'from' | 'to';
  readonly options: readonly { readonly name: string; readonly value: string | undefined }[];
}

/** `CREATE DATABASE [IF NOT EXISTS] name` (IF NOT EXISTS is Cairn's addition). */
export interface CreateDatabaseStatement {
  readonly kind: 'CreateDatabase';
  readonly name: string;
  readonly ifNotExists: boolean;
}

export interface DropDatabaseStatement {
  readonly kind: 'DropDatabase';
  readonly name: string;
  readonly ifExists: boolean;
}

// ---------------------------------------------------------------------------
// Sessions and transactions

/** Transaction characteristics of BEGIN / START TRANSACTION / SET TRANSACTION. */
export interface TransactionModes {
  readonly isolation: 'serializable' | 'repeatable read' | 'read committed' | 'read uncommitted' | undefined;
  readonly readOnly: boolean | undefined;
  readonly deferrable: boolean | undefined;
  /** Cairn's `AS OF SYSTEM TIME expr`. */
  readonly asOfSystemTime: Expr | undefined;
  /** CockroachDB's `PRIORITY LOW | NORMAL | HIGH` (conflict resolution between transactions). */
  readonly priority?: 'low' | 'normal' | 'high';
}

/** BEGIN [TRANSACTION|WORK] / START TRANSACTION [modes]. */
export interface BeginStatement {
  readonly kind: 'Begin';
  readonly modes: TransactionModes;
}

/** COMMIT / END. */
export interface CommitStatement {
  readonly kind: 'Commit';
}

/** ROLLBACK / ABORT. */
export interface RollbackStatement {
  readonly kind: 'Rollback';
}

export interface SetTransactionStatement {
  readonly kind: 'SetTransaction';
  readonly modes: TransactionModes;
}

export interface SavepointStatement {
  readonly kind: 'Savepoint';
  readonly name: string;
}

export interface ReleaseSavepointStatement {
  readonly kind: 'ReleaseSavepoint';
  readonly name: string;
}

export interface RollbackToSavepointStatement {
  readonly kind: 'RollbackToSavepoint';
  readonly name: string;
}

/**
 * `SET [SESSION|LOCAL] name {=|TO} value, … | DEFAULT`. `SET TIME ZONE x`
 * arrives as name "timezone"; SET NAMES as "client_encoding". `values` is
 * empty for DEFAULT. Names are lower-cased.
 */
export interface SetVarStatement {
  readonly kind: 'SetVar';
  readonly name: string;
  readonly values: readonly Expr[];
  readonly isDefault: boolean;
  readonly local: boolean;
}

/** `RESET name`; name is "all" for RESET ALL. */
export interface ResetVarStatement {
  readonly kind: 'ResetVar';
  readonly name: string;
}

/** `SHOW name`; name is "all" for SHOW ALL. */
export interface ShowVarStatement {
  readonly kind: 'ShowVar';
  readonly name: string;
}

/**
 * `EXPLAIN [ANALYZE] [VERBOSE] stmt` / `EXPLAIN (opt [value], …) stmt`.
 * Option names are lower-cased; value undefined means "on".
 */
export interface ExplainStatement {
  readonly kind: 'Explain';
  readonly options: readonly { readonly name: string; readonly value: string | undefined }[];
  readonly statement: Statement;
}

// ---------------------------------------------------------------------------
// Roles

/**
 * Role options. password: undefined when not given, null for `PASSWORD NULL`;
 * login: LOGIN/NOLOGIN. The other options PostgreSQL's grammar knows are kept
 * in `options` under PostgreSQL's names for the planner to accept or reject:
 * superuser, createdb, createrole, inherit, isreplication, bypassrls
 * (boolean), connectionlimit (number), validUntil (string).
 */
export interface RoleOptions {
  readonly password: string | null | undefined;
  readonly login: boolean | undefined;
  readonly options: readonly { readonly name: string; readonly value: string | number | boolean | undefined }[];
}

/** CREATE USER (isUser: LOGIN by default) / CREATE ROLE. */
export interface CreateRoleStatement {
  readonly kind: 'CreateRole';
  readonly name: string;
  readonly isUser: boolean;
  readonly ifNotExists: boolean;
  readonly options: RoleOptions;
}

/** ALTER USER|ROLE name [WITH] options. */
export interface AlterRoleStatement {
  readonly kind: 'AlterRole';
  readonly name: string;
  readonly options: RoleOptions;
}

/** DROP USER|ROLE [IF EXISTS] name, …. */
export interface DropRoleStatement {
  readonly kind: 'DropRole';
  readonly names: readonly string[];
  readonly ifExists: boolean;
}

// ---------------------------------------------------------------------------
// Cairn's own statements (cairn-statements.ts)

/** `SHOW TABLES [FROM db[.schema]]`. */
export interface ShowTablesStatement {
  readonly kind: 'ShowTables';
  readonly database: string | undefined;
  readonly schema: string | undefined;
}

/** `SHOW DATABASES`. */
export interface ShowDatabasesStatement {
  readonly kind: 'ShowDatabases';
}

/** `SHOW COLUMNS FROM t`. */
export interface ShowColumnsStatement {
  readonly kind: 'ShowColumns';
  readonly table: TableName;
}

/** `SHOW CREATE TABLE t` (also `SHOW CREATE t`). */
export interface ShowCreateTableStatement {
  readonly kind: 'ShowCreateTable';
  readonly table: TableName;
}

/** The table or index that a range statement is about: `TABLE t` / `INDEX t@i`. */
export type RangeTarget =
  | { readonly kind: 'table'; readonly table: TableName }
  | { readonly kind: 'index'; readonly table: TableName; readonly index: string };

/** `SHOW RANGES FROM TABLE t | FROM INDEX t@i`. */
export interface ShowRangesStatement {
  readonly kind: 'ShowRanges';
  readonly target: RangeTarget;
}

/**
 * `ALTER TABLE t SPLIT AT VALUES (…)[, (…)] [WITH EXPIRATION e]` /
 * `ALTER INDEX t@i SPLIT AT …`. `rows` is the query producing the split
 * points (VALUES or SELECT), each row a prefix of the index key columns;
 * `expiration` (a timestamp, or an interval from now) ends the split's
 * stickiness — without it the boundary stays until merged by hand.
 */
export interface SplitAtStatement {
  readonly kind: 'SplitAt';
  readonly target: RangeTarget;
  readonly rows: SelectStatement;
  readonly expiration?: Expr;
}

/**
 * `ALTER TABLE t SCATTER` / `ALTER INDEX t@i SCATTER` (CockroachDB's): the
 * leases of the target's ranges are spread over the nodes holding them.
 */
export interface ScatterStatement {
  readonly kind: 'Scatter';
  readonly target: RangeTarget;
}

/** What a zone configuration applies to. */
export type ZoneTarget =
  | RangeTarget
  | { readonly kind: 'database'; readonly database: string }
  | { readonly kind: 'range'; readonly range: string };

/**
 * `ALTER TABLE|INDEX|DATABASE|RANGE … CONFIGURE ZONE USING k = v, …` or
 * `… CONFIGURE ZONE DISCARD` (settings empty, discard true). Setting names
 * keep their dots (`gc.ttlseconds`), lower-cased.
 */
export interface ConfigureZoneStatement {
  readonly kind: 'ConfigureZone';
  readonly target: ZoneTarget;
  readonly settings: readonly { readonly name: string; readonly value: Expr }[];
  readonly discard: boolean;
}

/** `SHOW CLUSTER SETTING name` (name "all" for SHOW ALL CLUSTER SETTINGS). */
export interface ShowClusterSettingStatement {
  readonly kind: 'ShowClusterSetting';
  readonly name: string;
}

/** `SET CLUSTER SETTING name {=|TO} value | DEFAULT` (value undefined for DEFAULT). */
export interface SetClusterSettingStatement {
  readonly kind: 'SetClusterSetting';
  readonly name: string;
  readonly value: Expr | undefined;
}

// ---------------------------------------------------------------------------

export type Statement =
  | SelectStatement
  | InsertStatement
  | UpdateStatement
  | DeleteStatement
  | CreateTableStatement
  | DropTableStatement
  | CreateIndexStatement
  | DropIndexStatement
  | CreateDatabaseStatement
  | DropDatabaseStatement
  | AlterTableStatement
  | RenameStatement
  | CreateViewStatement
  | DropViewStatement
  | CreateSequenceStatement
  | DropSequenceStatement
  | TruncateStatement
  | CopyStatement
  | BeginStatement
  | CommitStatement
  | RollbackStatement
  | SetTransactionStatement
  | SavepointStatement
  | ReleaseSavepointStatement
  | RollbackToSavepointStatement
  | SetVarStatement
  | ResetVarStatement
  | ShowVarStatement
  | ExplainStatement
  | CreateRoleStatement
  | AlterRoleStatement
  | DropRoleStatement
  | ShowTablesStatement
  | ShowDatabasesStatement
  | ShowColumnsStatement
  | ShowCreateTableStatement
  | ShowRangesStatement
  | SplitAtStatement
  | ScatterStatement
  | ConfigureZoneStatement
  | ShowClusterSettingStatement
  | SetClusterSettingStatement;

/** A parameter of a statement as pgwire describes it. */
export interface ParamInfo {
  /** 1-based `$n`. */
  readonly index: number;
  /** The type of the first `$n::type` / CAST($n AS type), or undefined (to be inferred by the planner). */
  readonly type: TypeName | undefined;
}

/**
 * One statement of a parsed string: its AST, its original text (a slice of
 * the input from the statement's first token, without the trailing ';' —
 * the last statement may keep a trailing comment), its span in the input
 * (JS string offsets, end exclusive) and its parameters (params[i] is
 * `$(i+1)`; gaps have type undefined).
 */
export interface ParsedStatement {
  readonly ast: Statement;
  readonly sql: string;
  readonly start: number;
  readonly end: number;
  readonly params: readonly ParamInfo[];
}

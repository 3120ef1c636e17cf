/**
 * SqlError: the typed error every SQL layer (parser, planner, executor,
 * session) raises for an expected failure that reaches the client.
 *
 * It carries what a PostgreSQL ErrorResponse carries besides severity:
 *   - sqlState: the SQLSTATE (42601 syntax error, 0A000 feature not supported, …);
 *   - position: 1-based character (code point) offset into the statement
 *               text, as PostgreSQL reports it (`P` field); absent when the
 *               error is not tied to one spot;
 *   - detail / hint: the `D` and `H` fields;
 *   - schema / table / column / constraint: the `s`, `t`, `c`, `n` fields
 *     PostgreSQL sets on integrity violations (23502 column, 23503 / 23505 /
 *     23514 constraint), which ORMs read to say which constraint failed.
 *
 * Codes are `sql.<something>`; messages name their module ("parser: …"),
 * except for messages whose exact wording clients match on (PostgreSQL's own
 * "syntax error at or near …").
 *
 * Ownership: sql/parser defines it; the rest of sql/ imports it from here.
 */
import { CairnError } from '../../src/util/errors.js';

export interface SqlErrorOptions {
  readonly position?: number;
  readonly detail?: string;
  readonly hint?: string;
  readonly cause?: unknown;
  readonly retryable?: boolean;
  readonly schema?: string;
  readonly table?: string;
  readonly column?: string;
  readonly constraint?: string;
}

export class SqlError extends CairnError {
  override name = 'SqlError';
  /** 1-based character position in the statement text, PostgreSQL style. */
  readonly position: number | undefined;
  readonly detail: string | undefined;
  readonly hint: string | undefined;
  readonly schema: string | undefined;
  readonly table: string | undefined;
  readonly column: string | undefined;
  readonly constraint: string | undefined;

  constructor(code: string, sqlState: string, message: string, opts: SqlErrorOptions = {}) {
    super(code, message, { sqlState, cause: opts.cause, retryable: opts.retryable ?? false });
    this.position = opts.position;
    this.detail = opts.detail;
    this.hint = opts.hint;
    this.schema = opts.schema;
    this.table = opts.table;
    this.column = opts.column;
    this.constraint = opts.constraint;
  }
}

/** SQLSTATE 42601: the text is not valid SQL. `position` is 1-based. */
export function syntaxError(message: string, position?: number, detail?: string): SqlError {
  return new SqlError('sql.syntax_error', '42601', message, { position, detail });
}

/** SQLSTATE 0A000: valid SQL that Cairn does not support (yet). Names the construct. */
export function unimplemented(construct: string, hint?: string): SqlError {
  return new SqlError('sql.unimplemented', '0A000', `unimplemented: ${construct}`, { hint });
}

/**
 * Errors of the pgwire layer.
 *
 * Two kinds of failure reach a client as an ErrorResponse:
 *   - ProtocolViolationError (SQLSTATE 08P01): the byte stream broke the
 *     PostgreSQL v3 protocol. The connection cannot be resynchronised, so the
 *     connection state machine sends the error and closes.
 *   - PgError: any other SQL-level failure with PostgreSQL's optional fields
 *     (detail, hint, position, …). Session and executor code may throw it —
 *     or any CairnError, whose `sqlState` is used — and the connection stays
 *     open (the extended protocol then skips to Sync).
 *
 * Ownership: errors are values created by the thrower; the connection only
 * reads them.
 */
import { CairnError, type CairnErrorOptions } from '../../src/util/index.js';

/** Optional ErrorResponse/NoticeResponse fields (PostgreSQL protocol §55.8). */
export interface PgErrorFields {
  readonly detail?: string;
  readonly hint?: string;
  /** 1-based character position in the query text. */
  readonly position?: number;
  readonly internalPosition?: number;
  readonly internalQuery?: string;
  readonly where?: string;
  readonly schema?: string;
  readonly table?: string;
  readonly column?: string;
  readonly dataType?: string;
  readonly constraint?: string;
}

/** A SQL-level error with a SQLSTATE and PostgreSQL's optional fields. */
export class PgError extends CairnError {
  override name = 'PgError';
  readonly fields: PgErrorFields;

  constructor(code: string, sqlState: string, message: string, fields: PgErrorFields = {}, opts: CairnErrorOptions = {}) {
    super(code, message, { ...opts, sqlState });
    this.fields = fields;
  }
}

/** The frontend byte stream violates the protocol: 08P01, then close. */
export class ProtocolViolationError extends CairnError {
  override name = 'ProtocolViolationError';
  constructor(message: string) {
    super('pgwire.protocol_violation', `pgwire: ${message}`, { sqlState: '08P01' });
  }
}

/**
 * The pgwire layer's public surface: the PostgreSQL v3 wire protocol, server
 * side. src/server calls `handlePgConnection` for each accepted socket; the
 * SQL session implements `SessionFactory` / `SessionBackend`
 * (session-backend.ts documents the contract); `CREATE USER … PASSWORD`
 * stores `formatScramCredential(makeScramCredential(…))`.
 */
export { BackendWriter, sslResponse } from './backend.js';
export type { ColumnDescriptor, ErrorFields, Severity, TxnStatus } from './backend.js';
export { CancelRegistry } from './cancel-registry.js';
export { PgConn, DEFAULT_PARAMETER_STATUS, errorFields } from './conn.js';
export type { ConnOptions, ConnStats, ConnTransport } from './conn.js';
export { PgError, ProtocolViolationError } from './errors.js';
export type { PgErrorFields } from './errors.js';
export { FrontendDecoder, parsePasswordMessage, parseSASLInitialResponse, DEFAULT_MAX_MESSAGE_SIZE } from './frontend.js';
export type { FormatCode, FrontendMessage, NormalPhaseMessage, StartupPhaseMessage } from './frontend.js';
export {
  DEFAULT_SCRAM_ITERATIONS,
  SCRAM_SHA_256,
  ScramServerExchange,
  formatScramCredential,
  makeScramCredential,
  parseScramCredential,
  saslPrep,
  verifyScramPassword,
} from './scram.js';
export type { ScramCredential, ScramFinalResult } from './scram.js';
export { handlePgConnection, secureContextFromCertsDir } from './server.js';
export type { PgConnectionOptions } from './server.js';
export type {
  AuthMethod,
  BindParams,
  ExecuteResult,
  NoticeFields,
  Portal,
  PreparedStatement,
  RowSink,
  SessionBackend,
  SessionFactory,
  SimpleQuerySink,
  StartupInfo,
} from './session-backend.js';

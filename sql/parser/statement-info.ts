/**
 * What pgwire and the session need to know about a statement before running
 * it, after CockroachDB's tree.Statement StatementTag / StatementReturnType:
 *
 *   statementTag(s)         the command tag of CommandComplete ("INSERT",
 *                           "CREATE TABLE", …); pgwire appends counts
 *                           ("INSERT 0 5", "SELECT 3", "UPDATE 2").
 *   statementReturnType(s)  what the statement sends back:
 *     rows          a result set (RowDescription + DataRows): queries, SHOW,
 *                   EXPLAIN, DML with RETURNING, SPLIT AT;
 *     rowsAffected  a count only: INSERT/UPDATE/DELETE without RETURNING;
 *     copy          the COPY sub-protocol;
 *     ddl           a schema change (no rows; the session may need to wait
 *                   for it to take effect);
 *     ack           nothing but the tag: transaction control, SET, …
 *
 * Exhaustive over Statement (assertNever), so a new statement kind must
 * decide here.
 */
import { assertNever } from '../../src/util/assert.js';
import type { Statement } from './ast.js';

export type StatementReturnType = 'rows' | 'rowsAffected' | 'copy' | 'ddl' | 'ack';

/** The CommandComplete tag, without counts. */
export function statementTag(s: Statement): string {
  switch (s.kind) {
    case 'Select':
      return 'SELECT';
    case 'Insert':
      return 'INSERT';
    case 'Update':
      return 'UPDATE';
    case 'Delete':
      return 'DELETE';
    case 'CreateTable':
      return 'CREATE TABLE';
    case 'DropTable':
      return 'DROP TABLE';
    case 'CreateIndex':
      return 'CREATE INDEX';
    case 'DropIndex':
      return 'DROP INDEX';
    case 'CreateDatabase':
      return 'CREATE DATABASE';
    case 'DropDatabase':
      return 'DROP DATABASE';
    case 'AlterTable':
      return 'ALTER TABLE';
    case 'Rename':
      return s.target === 'column' || s.target === 'constraint' ? 'ALTER TABLE' : `ALTER ${s.target.toUpperCase()}`;
    case 'CreateView':
      return 'CREATE VIEW';
    case 'DropView':
      return 'DROP VIEW';
    case 'CreateSequence':
      return 'CREATE SEQUENCE';
    case 'DropSequence':
      return 'DROP SEQUENCE';
    case 'Truncate':
      return 'TRUNCATE TABLE';
    case 'Copy':
      return 'COPY';
    case 'Begin':
      return 'BEGIN';
    case 'Commit':
      return 'COMMIT';
    case 'Rollback':
    case 'RollbackToSavepoint':
      return 'ROLLBACK';
    case 'SetTransaction':
    case 'SetVar':
      return 'SET';
    case 'Savepoint':
      return 'SAVEPOINT';
    case 'ReleaseSavepoint':
      return 'RELEASE';
    case 'ResetVar':
      return 'RESET';
    case 'ShowVar':
    case 'ShowClusterSetting':
      return 'SHOW';
    case 'Explain':
      return 'EXPLAIN';
    case 'CreateRole':
      return 'CREATE ROLE';
    case 'AlterRole':
      return 'ALTER ROLE';
    case 'DropRole':
      return 'DROP ROLE';
    case 'ShowTables':
      return 'SHOW TABLES';
    case 'ShowDatabases':
      return 'SHOW DATABASES';
    case 'ShowColumns':
      return 'SHOW COLUMNS';
    case 'ShowCreateTable':
      return 'SHOW CREATE';
    case 'ShowRanges':
      return 'SHOW RANGES';
    case 'SplitAt':
      return 'SPLIT';
    case 'Scatter':
      return 'SCATTER';
    case 'ConfigureZone':
      return 'CONFIGURE ZONE';
    case 'SetClusterSetting':
      return 'SET CLUSTER SETTING';
    default:
      return assertNever(s, 'statementTag: unknown statement');
  }
}

/** What the statement sends back (see the header). */
export function statementReturnType(s: Statement): StatementReturnType {
  switch (s.kind) {
    case 'Select':
    case 'Explain':
    case 'ShowVar':
    case 'ShowClusterSetting':
    case 'ShowTables':
    case 'ShowDatabases':
    case 'ShowColumns':
    case 'ShowCreateTable':
    case 'ShowRanges':
    case 'SplitAt':
    case 'Scatter':
      return 'rows';
    case 'Insert':
    case 'Update':
    case 'Delete':
      return s.returning.length > 0 ? 'rows' : 'rowsAffected';
    case 'Copy':
      return 'copy';
    case 'CreateTable':
    case 'DropTable':
    case 'CreateIndex':
    case 'DropIndex':
    case 'CreateDatabase':
    case 'DropDatabase':
    case 'AlterTable':
    case 'Rename':
    case 'CreateView':
    case 'DropView':
    case 'CreateSequence':
    case 'DropSequence':
    case 'Truncate':
    case 'ConfigureZone':
      return 'ddl';
    case 'Begin':
    case 'Commit':
    case 'Rollback':
    case 'SetTransaction':
    case 'Savepoint':
    case 'ReleaseSavepoint':
    case 'RollbackToSavepoint':
    case 'SetVar':
    case 'ResetVar':
    case 'CreateRole':
    case 'AlterRole':
    case 'DropRole':
    case 'SetClusterSetting':
      return 'ack';
    default:
      return assertNever(s, 'statementReturnType: unknown statement');
  }
}

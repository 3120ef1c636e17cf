/**
 * sql/parser's public surface: parse entry points, the AST types, the
 * walkers and printers, the statement cache and SqlError.
 */
export * from './ast.js';
export { initParser, isParserLoaded } from './pg-query-module.js';
export { parseSql, parseOne, parseExpr } from './parse.js';
export { exprChildren, walkExpr, mapExpr } from './walk.js';
export { formatExpr, formatStatement, formatSelect, formatTypeName, formatColumnDef, formatTableConstraint, formatTableExpr, formatTableName, quoteIdent, quoteString } from './format.js';
export { StatementCache, type StatementCacheStats } from './statement-cache.js';
export { SqlError, syntaxError, unimplemented, type SqlErrorOptions } from './sql-error.js';
export { statementTag, statementReturnType, type StatementReturnType } from './statement-info.js';

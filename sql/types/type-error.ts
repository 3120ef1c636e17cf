/**
 * The typed errors raised by sql/types: bad input text, values out of range,
 * strings too long, division by zero, bad date/time fields, mismatched types.
 * Each is a SqlError (sql/parser/sql-error.ts) carrying the SQLSTATE and the
 * message text PostgreSQL 15 uses, because clients and ORMs match on both.
 *
 *   22P02  invalid_text_representation   invalid input syntax for type integer: "x"
 *   22003  numeric_value_out_of_range     integer out of range / numeric field overflow
 *   22001  string_data_right_truncation   value too long for type character varying(3)
 *   22012  division_by_zero               division by zero
 *   22007  invalid_datetime_format        invalid input syntax for type date: "x"
 *   22008  datetime_field_overflow        date/time field value out of range: "x"
 *   42804  datatype_mismatch              …
 *   42846  cannot_coerce                  cannot cast type bytea to integer
 *   42883  undefined_function             operator does not exist: oid < numeric
 *
 * Ownership: sql/types raises these; the executor and pgwire only read them.
 */
import { SqlError } from '../parser/sql-error.js';

/** 22P02: `input` is not valid text for the type named `typeName` (as format_type prints it). */
export function invalidTextRepresentation(typeName: string, input: string): SqlError {
  return new SqlError('sql.invalid_text_representation', '22P02', `invalid input syntax for type ${typeName}: "${input}"`);
}

/** 22003 with PostgreSQL's message, e.g. "integer out of range". */
export function outOfRange(message: string): SqlError {
  return new SqlError('sql.numeric_value_out_of_range', '22003', message);
}

/** 22001: an assignment to varchar(n)/char(n) that would need truncating non-spaces. */
export function stringTooLong(typeName: string): SqlError {
  return new SqlError('sql.string_data_right_truncation', '22001', `value too long for type ${typeName}`);
}

/** 22012. */
export function divisionByZero(): SqlError {
  return new SqlError('sql.division_by_zero', '22012', 'division by zero');
}

/** 22007: date/time text that does not parse. */
export function invalidDatetimeFormat(typeName: string, input: string): SqlError {
  return new SqlError('sql.invalid_datetime_format', '22007', `invalid input syntax for type ${typeName}: "${input}"`);
}

/** 22008: a date/time field or the whole value out of its range. */
export function datetimeOverflow(message: string): SqlError {
  return new SqlError('sql.datetime_field_overflow', '22008', message);
}

/** 42804: a value of the wrong type where a given type is required. */
export function datatypeMismatch(message: string): SqlError {
  return new SqlError('sql.datatype_mismatch', '42804', message);
}

/** 42846: no cast exists between the two types. */
export function cannotCoerce(from: string, to: string): SqlError {
  return new SqlError('sql.cannot_coerce', '42846', `cannot cast type ${from} to ${to}`);
}

/** 22023: e.g. an unknown time zone name. */
export function invalidParameterValue(message: string): SqlError {
  return new SqlError('sql.invalid_parameter_value', '22023', message);
}

/** 42883: no operator for these operand types (`left` undefined for a prefix operator). */
export function undefinedOperator(op: string, left: string | undefined, right: string): SqlError {
  return new SqlError('sql.undefined_function', '42883', `operator does not exist: ${left === undefined ? '' : `${left} `}${op} ${right}`);
}

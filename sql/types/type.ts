/**
 * SqlType: the descriptor of a SQL type — its family (how values are held
 * and compared), its PostgreSQL OID, its type modifier and, for arrays, the
 * element type. OIDs, typlen and the names `format_type` prints match
 * PostgreSQL 15 exactly (pg_type.dat), because drivers decide how to decode a
 * column from the OID in RowDescription and ORMs read pg_catalog.
 *
 *   typmod is PostgreSQL's atttypmod, sent as-is in RowDescription:
 *     varchar(n), char(n)   n + 4                  (-1: no limit)
 *     numeric(p, s)         ((p << 16) | s) + 4    (-1: unconstrained)
 *     timestamp(p), timestamptz(p)                p (0..6)
 *     interval(p)           (0x7fff << 16) | p     (all fields, precision p)
 *     everything else       -1
 *
 * Families (what the datum is, datum.ts): bool, int (int2/int4 number, int8
 * bigint), float, numeric (Decimal), string (text, varchar, bpchar, name,
 * "char"), bytes, date, timestamp, timestamptz, interval, uuid, json (text
 * kept as written), jsonb (Jsonb), oid (oid, regclass, regtype, regproc),
 * unknown (an untyped literal: its text), array (element type in arrayElem;
 * int2vector/oidvector are arrays with their own OIDs), void, record.
 *
 * Types are plain frozen objects; compare them with sameType(), not ===,
 * except for the shared constants below (which is what most code holds).
 *
 * Ownership: sql/types. The parser's TypeName converts through typeFromName().
 */
import { assert } from '../../src/util/assert.js';
import { SqlError } from '../parser/sql-error.js';

export type TypeFamily =
  | 'bool'
  | 'int'
  | 'float'
  | 'numeric'
  | 'string'
  | 'bytes'
  | 'date'
  | 'timestamp'
  | 'timestamptz'
  | 'interval'
  | 'uuid'
  | 'json'
  | 'jsonb'
  | 'oid'
  | 'unknown'
  | 'array'
  | 'void'
  | 'record';

export interface SqlType {
  readonly family: TypeFamily;
  readonly oid: number;
  /** PostgreSQL's atttypmod; -1 when there is none. */
  readonly typmod: number;
  /** The element type of an array (family 'array'). */
  readonly arrayElem?: SqlType;
}

/** PostgreSQL type OIDs (pg_type.dat). */
export const Oid = {
  bool: 16,
  bytea: 17,
  char: 18,
  name: 19,
  int8: 20,
  int2: 21,
  int2vector: 22,
  int4: 23,
  regproc: 24,
  text: 25,
  oid: 26,
  oidvector: 30,
  json: 114,
  float4: 700,
  float8: 701,
  unknown: 705,
  bpchar: 1042,
  varchar: 1043,
  date: 1082,
  time: 1083,
  timestamp: 1114,
  timestamptz: 1184,
  interval: 1186,
  numeric: 1700,
  regclass: 2205,
  regtype: 2206,
  record: 2249,
  void: 2278,
  uuid: 2950,
  jsonb: 3802,
  // array types
  _bool: 1000,
  _bytea: 1001,
  _char: 1002,
  _name: 1003,
  _int2: 1005,
  _int2vector: 1006,
  _int4: 1007,
  _regproc: 1008,
  _text: 1009,
  _oid: 1028,
  _oidvector: 1013,
  _bpchar: 1014,
  _varchar: 1015,
  _int8: 1016,
  _float4: 1021,
  _float8: 1022,
  _json: 199,
  _date: 1182,
  _time: 1183,
  _timestamp: 1115,
  _timestamptz: 1185,
  _interval: 1187,
  _numeric: 1231,
  _regclass: 2210,
  _regtype: 2211,
  _record: 2287,
  _uuid: 2951,
  _jsonb: 3807,
} as const;

/** Per scalar OID: family, pg_type.typname, typlen, format_type name, array OID. */
interface ScalarInfo {
  readonly family: TypeFamily;
  readonly typname: string;
  readonly typlen: number;
  readonly display: string;
  readonly arrayOid: number;
}

const SCALARS: ReadonlyMap<number, ScalarInfo> = new Map<number, ScalarInfo>([
  [Oid.bool, { family: 'bool', typname: 'bool', typlen: 1, display: 'boolean', arrayOid: Oid._bool }],
  [Oid.bytea, { family: 'bytes', typname: 'bytea', typlen: -1, display: 'bytea', arrayOid: Oid._bytea }],
  [Oid.char, { family: 'string', typname: 'char', typlen: 1, display: '"char"', arrayOid: Oid._char }],
  [Oid.name, { family: 'string', typname: 'name', typlen: 64, display: 'name', arrayOid: Oid._name }],
  [Oid.int8, { family: 'int', typname: 'int8', typlen: 8, display: 'bigint', arrayOid: Oid._int8 }],
  [Oid.int2, { family: 'int', typname: 'int2', typlen: 2, display: 'smallint', arrayOid: Oid._int2 }],
  [Oid.int4, { family: 'int', typname: 'int4', typlen: 4, display: 'integer', arrayOid: Oid._int4 }],
  [Oid.regproc, { family: 'oid', typname: 'regproc', typlen: 4, display: 'regproc', arrayOid: Oid._regproc }],
  [Oid.text, { family: 'string', typname: 'text', typlen: -1, display: 'text', arrayOid: Oid._text }],
  [Oid.oid, { family: 'oid', typname: 'oid', typlen: 4, display: 'oid', arrayOid: Oid._oid }],
  [Oid.json, { family: 'json', typname: 'json', typlen: -1, display: 'json', arrayOid: Oid._json }],
  [Oid.float4, { family: 'float', typname: 'float4', typlen: 4, display: 'real', arrayOid: Oid._float4 }],
  [Oid.float8, { family: 'float', typname: 'float8', typlen: 8, display: 'double precision', arrayOid: Oid._float8 }],
  [Oid.unknown, { family: 'unknown', typname: 'unknown', typlen: -2, display: 'unknown', arrayOid: 0 }],
  [Oid.bpchar, { family: 'string', typname: 'bpchar', typlen: -1, display: 'character', arrayOid: Oid._bpchar }],
  [Oid.varchar, { family: 'string', typname: 'varchar', typlen: -1, display: 'character varying', arrayOid: Oid._varchar }],
  [Oid.date, { family: 'date', typname: 'date', typlen: 4, display: 'date', arrayOid: Oid._date }],
  [Oid.timestamp, { family: 'timestamp', typname: 'timestamp', typlen: 8, display: 'timestamp without time zone', arrayOid: Oid._timestamp }],
  [Oid.timestamptz, { family: 'timestamptz', typname: 'timestamptz', typlen: 8, display: 'timestamp with time zone', arrayOid: Oid._timestamptz }],
  [Oid.interval, { family: 'interval', typname: 'interval', typlen: 16, display: 'interval', arrayOid: Oid._interval }],
  [Oid.numeric, { family: 'numeric', typname: 'numeric', typlen: -1, display: 'numeric', arrayOid: Oid._numeric }],
  [Oid.regclass, { family: 'oid', typname: 'regclass', typlen: 4, display: 'regclass', arrayOid: Oid._regclass }],
  [Oid.regtype, { family: 'oid', typname: 'regtype', typlen: 4, display: 'regtype', arrayOid: Oid._regtype }],
  [Oid.record, { family: 'record', typname: 'record', typlen: -1, display: 'record', arrayOid: Oid._record }],
  [Oid.void, { family: 'void', typname: 'void', typlen: 4, display: 'void', arrayOid: 0 }],
  [Oid.uuid, { family: 'uuid', typname: 'uuid', typlen: 16, display: 'uuid', arrayOid: Oid._uuid }],
  [Oid.jsonb, { family: 'jsonb', typname: 'jsonb', typlen: -1, display: 'jsonb', arrayOid: Oid._jsonb }],
]);

function scalar(oid: number): SqlType {
  const info = SCALARS.get(oid);
  assert(info !== undefined, `types: no scalar type with oid ${oid}`);
  return Object.freeze({ family: info.family, oid, typmod: -1 });
}

/** The unmodified scalar types. */
export const T = {
  bool: scalar(Oid.bool),
  bytea: scalar(Oid.bytea),
  char: scalar(Oid.char),
  name: scalar(Oid.name),
  int8: scalar(Oid.int8),
  int2: scalar(Oid.int2),
  int4: scalar(Oid.int4),
  regproc: scalar(Oid.regproc),
  text: scalar(Oid.text),
  oid: scalar(Oid.oid),
  json: scalar(Oid.json),
  float4: scalar(Oid.float4),
  float8: scalar(Oid.float8),
  unknown: scalar(Oid.unknown),
  bpchar: scalar(Oid.bpchar),
  varchar: scalar(Oid.varchar),
  date: scalar(Oid.date),
  timestamp: scalar(Oid.timestamp),
  timestamptz: scalar(Oid.timestamptz),
  interval: scalar(Oid.interval),
  numeric: scalar(Oid.numeric),
  regclass: scalar(Oid.regclass),
  regtype: scalar(Oid.regtype),
  record: scalar(Oid.record),
  void: scalar(Oid.void),
  uuid: scalar(Oid.uuid),
  jsonb: scalar(Oid.jsonb),
  int2vector: Object.freeze({ family: 'array', oid: Oid.int2vector, typmod: -1, arrayElem: scalar(Oid.int2) }) as SqlType,
  oidvector: Object.freeze({ family: 'array', oid: Oid.oidvector, typmod: -1, arrayElem: scalar(Oid.oid) }) as SqlType,
} as const;

const VARHDRSZ = 4;
/** INTERVAL_FULL_RANGE << 16: an interval typmod naming every field. */
const INTERVAL_FULL_RANGE = 0x7fff << 16;
/** PostgreSQL's limit on char/varchar lengths. */
export const MAX_STRING_LENGTH = 10485760;
/** PostgreSQL's limit on numeric precision. */
export const NUMERIC_MAX_PRECISION = 1000;
/** Identifiers (type `name`) keep at most this many bytes (NAMEDATALEN − 1). */
export const NAME_MAX_BYTES = 63;

function typeModError(message: string): SqlError {
  return new SqlError('sql.invalid_type_modifier', '22023', message);
}

/** varchar(n). */
export function varchar(n: number): SqlType {
  if (!(n >= 1 && n <= MAX_STRING_LENGTH)) throw typeModError(`length for type varchar must be between 1 and ${MAX_STRING_LENGTH}`);
  return Object.freeze({ family: 'string', oid: Oid.varchar, typmod: n + VARHDRSZ });
}

/** char(n) (bpchar, blank-padded). Bare `char` is char(1). */
export function bpchar(n: number): SqlType {
  if (!(n >= 1 && n <= MAX_STRING_LENGTH)) throw typeModError(`length for type char must be between 1 and ${MAX_STRING_LENGTH}`);
  return Object.freeze({ family: 'string', oid: Oid.bpchar, typmod: n + VARHDRSZ });
}

/** numeric(p, s); s defaults to 0 as in PostgreSQL. */
export function numeric(precision: number, scale = 0): SqlType {
  if (!(precision >= 1 && precision <= NUMERIC_MAX_PRECISION)) {
    throw typeModError(`NUMERIC precision ${precision} must be between 1 and ${NUMERIC_MAX_PRECISION}`);
  }
  if (!(scale >= 0 && scale <= precision)) throw typeModError(`NUMERIC scale ${scale} must be between 0 and precision ${precision}`);
  return Object.freeze({ family: 'numeric', oid: Oid.numeric, typmod: ((precision << 16) | scale) + VARHDRSZ });
}

/** timestamp(p), timestamptz(p), interval(p): fractional-second digits 0..6. */
export function withPrecision(base: SqlType, p: number): SqlType {
  assert(base.family === 'timestamp' || base.family === 'timestamptz' || base.family === 'interval', 'types: precision on a non-time type');
  if (!(p >= 0)) throw typeModError(`precision for type ${formatType(base)} must be non-negative`);
  const prec = Math.min(p, 6);
  return Object.freeze({ family: base.family, oid: base.oid, typmod: base.family === 'interval' ? INTERVAL_FULL_RANGE | prec : prec });
}

const arrayCache = new Map<number, SqlType>();

/** The array type over `elem` (one OID covers every dimension, as in PostgreSQL). */
export function arrayOf(elem: SqlType): SqlType {
  const info = SCALARS.get(elem.oid);
  if (info === undefined || info.arrayOid === 0 || elem.family === 'array') {
    throw new SqlError('sql.undefined_object', '42704', `could not find array type for data type ${formatType(elem)}`);
  }
  if (elem.typmod === -1) {
    const cached = arrayCache.get(elem.oid);
    if (cached !== undefined) return cached;
  }
  const t: SqlType = Object.freeze({ family: 'array', oid: info.arrayOid, typmod: elem.typmod, arrayElem: elem });
  if (elem.typmod === -1) arrayCache.set(elem.oid, t);
  return t;
}

const elemOfArrayOid = new Map<number, number>();
for (const [oid, info] of SCALARS) if (info.arrayOid !== 0) elemOfArrayOid.set(info.arrayOid, oid);

/** The type for an OID as a client sends it in Parse/Bind (typmod −1); undefined if unknown to Cairn. */
export function typeFromOid(oid: number): SqlType | undefined {
  if (oid === Oid.int2vector) return T.int2vector;
  if (oid === Oid.oidvector) return T.oidvector;
  if (SCALARS.has(oid)) return scalar0(oid);
  const elem = elemOfArrayOid.get(oid);
  return elem === undefined ? undefined : arrayOf(scalar0(elem));
}

const scalarConsts = new Map<number, SqlType>();
for (const t of Object.values(T)) if (t.family !== 'array') scalarConsts.set(t.oid, t);
function scalar0(oid: number): SqlType {
  return scalarConsts.get(oid) ?? scalar(oid);
}

/** pg_type.typlen: 1, 2, 4, 8, 16 or 64 for fixed-size types, −1 varlena, −2 C string. */
export function typlen(t: SqlType): number {
  if (t.family === 'array') return -1;
  return SCALARS.get(t.oid)?.typlen ?? -1;
}

/** pg_type.typname ("int4", "_int4", "varchar"). */
export function typname(t: SqlType): string {
  if (t.oid === Oid.int2vector) return 'int2vector';
  if (t.oid === Oid.oidvector) return 'oidvector';
  if (t.family === 'array') return `_${typname(t.arrayElem as SqlType)}`;
  return SCALARS.get(t.oid)?.typname ?? '???';
}

/** The character limit of varchar(n)/char(n), or undefined when unlimited. */
export function stringLength(t: SqlType): number | undefined {
  return (t.oid === Oid.varchar || t.oid === Oid.bpchar) && t.typmod >= VARHDRSZ ? t.typmod - VARHDRSZ : undefined;
}

/** numeric(p, s)'s precision and scale, or undefined when unconstrained. */
export function numericPrecisionScale(t: SqlType): { precision: number; scale: number } | undefined {
  if (t.oid !== Oid.numeric || t.typmod < VARHDRSZ) return undefined;
  const m = t.typmod - VARHDRSZ;
  return { precision: (m >> 16) & 0xffff, scale: m & 0x7ff };
}

/** Fractional-second precision of timestamp(p)/interval(p), or undefined. */
export function timePrecision(t: SqlType): number | undefined {
  if (t.typmod < 0) return undefined;
  if (t.family === 'interval') {
    const p = t.typmod & 0xffff;
    return p === 0xffff ? undefined : p;
  }
  return t.family === 'timestamp' || t.family === 'timestamptz' ? t.typmod : undefined;
}

/** The type name as PostgreSQL's format_type(oid, typmod) prints it. */
export function formatType(t: SqlType): string {
  if (t.oid === Oid.int2vector) return 'int2vector';
  if (t.oid === Oid.oidvector) return 'oidvector';
  if (t.family === 'array') return `${formatType(t.arrayElem as SqlType)}[]`;
  const info = SCALARS.get(t.oid);
  if (info === undefined) return '???';
  if (t.typmod < 0) return t.oid === Oid.bpchar ? 'bpchar' : info.display;
  switch (t.oid) {
    case Oid.varchar:
    case Oid.bpchar:
      return `${info.display}(${t.typmod - VARHDRSZ})`;
    case Oid.numeric: {
      const ps = numericPrecisionScale(t) as { precision: number; scale: number };
      return `numeric(${ps.precision},${ps.scale})`;
    }
    case Oid.timestamp:
      return `timestamp(${t.typmod}) without time zone`;
    case Oid.timestamptz:
      return `timestamp(${t.typmod}) with time zone`;
    case Oid.interval: {
      const p = timePrecision(t);
      return p === undefined ? 'interval' : `interval(${p})`;
    }
    default:
      return info.display;
  }
}

/** Same OID and typmod (and element type, for arrays). */
export function sameType(a: SqlType, b: SqlType): boolean {
  return a.oid === b.oid && a.typmod === b.typmod;
}

/** The type without its modifier (varchar(5) → varchar). */
export function baseType(t: SqlType): SqlType {
  if (t.typmod === -1) return t;
  if (t.family === 'array') return arrayOf(baseType(t.arrayElem as SqlType));
  return scalar0(t.oid);
}

const NAMED: ReadonlyMap<string, SqlType> = new Map<string, SqlType>([
  ['bool', T.bool],
  ['boolean', T.bool],
  ['bytea', T.bytea],
  ['"char"', T.char],
  ['name', T.name],
  ['int8', T.int8],
  ['bigint', T.int8],
  ['int2', T.int2],
  ['smallint', T.int2],
  ['int4', T.int4],
  ['int', T.int4],
  ['integer', T.int4],
  ['regproc', T.regproc],
  ['text', T.text],
  ['string', T.text],
  ['oid', T.oid],
  ['json', T.json],
  ['float4', T.float4],
  ['real', T.float4],
  ['float8', T.float8],
  ['float', T.float8],
  ['double precision', T.float8],
  ['unknown', T.unknown],
  ['bpchar', T.bpchar],
  ['varchar', T.varchar],
  ['character varying', T.varchar],
  ['date', T.date],
  ['timestamp', T.timestamp],
  ['timestamp without time zone', T.timestamp],
  ['timestamptz', T.timestamptz],
  ['timestamp with time zone', T.timestamptz],
  ['interval', T.interval],
  ['numeric', T.numeric],
  ['decimal', T.numeric],
  ['regclass', T.regclass],
  ['regtype', T.regtype],
  ['record', T.record],
  ['void', T.void],
  ['uuid', T.uuid],
  ['jsonb', T.jsonb],
  ['int2vector', T.int2vector],
  ['oidvector', T.oidvector],
]);

/**
 * The type for a parser TypeName (sql/parser/ast.ts: canonical lower-case
 * name, modifiers as written, `[]` count). `char`/`character` without a
 * length is char(1), as in PostgreSQL. Throws 42704 for an unknown name.
 */
export function typeFromName(name: string, mods: readonly number[] = [], arrayDims = 0): SqlType {
  let t: SqlType | undefined;
  const n = name.toLowerCase();
  if (n === 'char' || n === 'character') {
    t = bpchar(mods[0] ?? 1);
  } else {
    const base = NAMED.get(n);
    if (base === undefined) throw new SqlError('sql.undefined_object', '42704', `type "${name}" does not exist`);
    t = base;
    if (mods.length > 0) {
      if (base === T.varchar) t = varchar(mods[0] as number);
      else if (base === T.bpchar) t = bpchar(mods[0] as number);
      else if (base === T.numeric) t = numeric(mods[0] as number, mods[1] ?? 0);
      else if (base === T.timestamp || base === T.timestamptz || base === T.interval) t = withPrecision(base, mods[0] as number);
      else if (base === T.float8 && name === 'float') t = (mods[0] as number) <= 24 ? T.float4 : T.float8;
      else throw typeModError(`type modifier is not allowed for type "${name}"`);
    }
  }
  return arrayDims > 0 ? arrayOf(t) : t; // one array type serves every dimension
}

// SqlType descriptors against PostgreSQL 15's pg_type and format_type().
import { describe, it, expect } from 'vitest';
import { T, arrayOf, bpchar, formatType, numeric, numericPrecisionScale, stringLength, timePrecision, typeFromName, typeFromOid, typlen, typname, varchar, withPrecision } from '../../sql/types/type.js';
import { CairnError } from '../../src/util/errors.js';

// SELECT oid, typname, typlen, typarray, format_type(oid, NULL) FROM pg_type (PostgreSQL 15.18)
const PG_TYPE: readonly [number, string, number, number, string][] = [
  [16, 'bool', 1, 1000, 'boolean'],
  [17, 'bytea', -1, 1001, 'bytea'],
  [18, 'char', 1, 1002, '"char"'],
  [19, 'name', 64, 1003, 'name'],
  [20, 'int8', 8, 1016, 'bigint'],
  [21, 'int2', 2, 1005, 'smallint'],
  [23, 'int4', 4, 1007, 'integer'],
  [24, 'regproc', 4, 1008, 'regproc'],
  [25, 'text', -1, 1009, 'text'],
  [26, 'oid', 4, 1028, 'oid'],
  [114, 'json', -1, 199, 'json'],
  [700, 'float4', 4, 1021, 'real'],
  [701, 'float8', 8, 1022, 'double precision'],
  [1043, 'varchar', -1, 1015, 'character varying'],
  [1082, 'date', 4, 1182, 'date'],
  [1114, 'timestamp', 8, 1115, 'timestamp without time zone'],
  [1184, 'timestamptz', 8, 1185, 'timestamp with time zone'],
  [1186, 'interval', 16, 1187, 'interval'],
  [1700, 'numeric', -1, 1231, 'numeric'],
  [2205, 'regclass', 4, 2210, 'regclass'],
  [2206, 'regtype', 4, 2211, 'regtype'],
  [2950, 'uuid', 16, 2951, 'uuid'],
  [3802, 'jsonb', -1, 3807, 'jsonb'],
];

describe('OIDs, typlen, typname and format_type match pg_type', () => {
  for (const [oid, name, len, arrOid, display] of PG_TYPE) {
    it(`${name} (${oid})`, () => {
      const t = typeFromOid(oid);
      expect(t).toBeDefined();
      expect(t!.oid).toBe(oid);
      expect(typname(t!)).toBe(name);
      expect(typlen(t!)).toBe(len);
      expect(formatType(t!)).toBe(display);
      const arr = arrayOf(t!);
      expect(arr.oid).toBe(arrOid);
      expect(typeFromOid(arrOid)).toEqual(arr);
      expect(typname(arr)).toBe(`_${name}`);
      expect(typlen(arr)).toBe(-1);
      expect(formatType(arr)).toBe(`${display}[]`);
    });
  }
  it('int2vector, oidvector, unknown, void, bpchar', () => {
    expect([T.int2vector.oid, typlen(T.int2vector), formatType(T.int2vector)]).toEqual([22, -1, 'int2vector']);
    expect([T.oidvector.oid, typlen(T.oidvector), formatType(T.oidvector)]).toEqual([30, -1, 'oidvector']);
    expect([T.unknown.oid, typlen(T.unknown)]).toEqual([705, -2]);
    expect([T.void.oid, typlen(T.void)]).toEqual([2278, 4]);
    expect(formatType(T.bpchar)).toBe('bpchar'); // format_type(1042, -1)
    expect(typeFromOid(424242)).toBeUndefined();
  });
});

describe('type modifiers (atttypmod as PostgreSQL stores it)', () => {
  it('encodes and prints like format_type(oid, typmod)', () => {
    // CREATE TABLE x(a interval(2), b timestamp(3), c numeric(10,2), d varchar(20)[], e char(4)) → atttypmod
    expect(withPrecision(T.interval, 2).typmod).toBe(2147418114);
    expect(withPrecision(T.timestamp, 3).typmod).toBe(3);
    expect(numeric(10, 2).typmod).toBe(655366);
    expect(arrayOf(varchar(20)).typmod).toBe(24);
    expect(bpchar(4).typmod).toBe(8);
    expect(formatType(varchar(20))).toBe('character varying(20)');
    expect(formatType(bpchar(5))).toBe('character(5)');
    expect(formatType(numeric(10, 2))).toBe('numeric(10,2)');
    expect(formatType(withPrecision(T.timestamp, 3))).toBe('timestamp(3) without time zone');
    expect(formatType(withPrecision(T.timestamptz, 0))).toBe('timestamp(0) with time zone');
    expect(formatType(withPrecision(T.interval, 2))).toBe('interval(2)');
    expect(formatType(arrayOf(varchar(20)))).toBe('character varying(20)[]');
    expect(stringLength(varchar(20))).toBe(20);
    expect(numericPrecisionScale(numeric(10, 2))).toEqual({ precision: 10, scale: 2 });
    expect(timePrecision(withPrecision(T.interval, 2))).toBe(2);
    expect(timePrecision(T.interval)).toBeUndefined();
  });
  it('typeFromName reads the parser\'s canonical names', () => {
    expect(typeFromName('int4')).toBe(T.int4);
    expect(typeFromName('bigint')).toBe(T.int8);
    expect(typeFromName('char')).toEqual(bpchar(1));
    expect(typeFromName('varchar', [10])).toEqual(varchar(10));
    expect(typeFromName('numeric', [12, 3])).toEqual(numeric(12, 3));
    expect(typeFromName('int4', [], 1)).toBe(arrayOf(T.int4));
    expect(typeFromName('timestamptz', [3])).toEqual(withPrecision(T.timestamptz, 3));
    expect(() => typeFromName('nosuchtype')).toThrow(CairnError);
    expect(() => typeFromName('varchar', [0])).toThrow(CairnError);
    expect(() => typeFromName('numeric', [3, 5])).toThrow(CairnError);
  });
});

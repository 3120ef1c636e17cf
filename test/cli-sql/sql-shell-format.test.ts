/**
 * The shell's result formatter (src/cli/sql-shell-format.ts): golden outputs
 * for table (psql's aligned format), expanded, CSV (RFC 4180) and TSV,
 * including NULLs, East Asian wide characters, combining marks and values
 * that hold newlines; and the error text with its SQLSTATE and caret.
 */
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { displayWidth, formatCommandTag, formatCsv, formatExpanded, formatTable, formatTsv, type ResultSet } from '../../src/cli/sql-shell-format.js';
import { continuationPrompt, formatError, promptFor, resolveConnection } from '../../src/cli/sql-shell.js';

const INT8 = 20;
const TEXT = 25;
const NUMERIC = 1700;

const rs: ResultSet = {
  columns: [
    { name: 'id', typeOid: INT8 },
    { name: 'name', typeOid: TEXT },
    { name: 'amount', typeOid: NUMERIC },
  ],
  rows: [
    ['1', 'ab', '1.50'],
    ['22', null, '-3'],
    ['333', '日本語', null],
    ['4', 'line one\nline two', '0'],
    ['5', 'cafe\u0301, "q"', '10'],
  ],
};

describe('displayWidth', () => {
  it('counts wide characters twice and combining marks not at all', () => {
    expect(displayWidth('abc')).toBe(3);
    expect(displayWidth('日本語')).toBe(6);
    expect(displayWidth('cafe\u0301')).toBe(4);
    expect(displayWidth('한국')).toBe(4);
    expect(displayWidth('🙂')).toBe(2);
    expect(displayWidth('ｆｕｌｌ')).toBe(8);
    expect(displayWidth('')).toBe(0);
  });
});

describe('formatTable', () => {
  it('aligns like psql: centred headers, numbers right, NULL, + on wrapped lines, row count', () => {
    expect(formatTable(rs)).toBe(
      [
        ' id  |   name    | amount',
        '-----+-----------+--------',
        '   1 | ab        |   1.50',
        '  22 | NULL      |     -3',
        ' 333 | 日本語    |   NULL',
        '   4 | line one +|      0',
        '     | line two  | ', // psql keeps the blank after the bar
        '   5 | cafe\u0301, "q" |     10',
        '(5 rows)',
        '',
      ].join('\n'),
    );
  });

  it('prints the header and (0 rows) for an empty result, (1 row) for one', () => {
    expect(formatTable({ columns: [{ name: 'x', typeOid: TEXT }], rows: [] })).toBe(' x\n---\n(0 rows)\n');
    expect(formatTable({ columns: [{ name: '?column?', typeOid: 23 }], rows: [['1']] })).toBe(' ?column?\n----------\n        1\n(1 row)\n');
  });

  it('every line of a table has the same display width up to trailing blanks', () => {
    const value = fc.option(fc.string({ unit: fc.constantFrom('a', 'é', '日', ' ', '\n', 'e\u0301') }), { nil: null });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.array(fc.array(value, { minLength: 4, maxLength: 4 }), { maxLength: 5 }), (ncol, rows) => {
        const columns = Array.from({ length: ncol }, (_, j) => ({ name: `c${j}`, typeOid: j % 2 === 0 ? TEXT : INT8 }));
        const lines = formatTable({ columns, rows: rows.map((r) => r.slice(0, ncol)) }).split('\n').slice(0, -2);
        const sep = lines[1] as string;
        for (const l of lines) expect(displayWidth(l)).toBeLessThanOrEqual(displayWidth(sep));
        // column boundaries line up with the separator's + signs
        const plus = [...sep].flatMap((c, i) => (c === '+' ? [i] : []));
        for (const l of lines.slice(2)) {
          let w = 0;
          const bars: number[] = [];
          for (const ch of l) {
            if (ch === '|') bars.push(w);
            w += displayWidth(ch);
          }
          expect(bars).toEqual(plus.slice(0, bars.length));
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('formatExpanded', () => {
  it('prints one record block per row', () => {
    expect(formatExpanded({ columns: rs.columns, rows: rs.rows.slice(1, 4) })).toBe(
      [
        '-[ RECORD 1 ]----',
        'id     | 22',
        'name   | NULL',
        'amount | -3',
        '-[ RECORD 2 ]----',
        'id     | 333',
        'name   | 日本語',
        'amount | NULL',
        '-[ RECORD 3 ]----',
        'id     | 4',
        'name   | line one+',
        '       | line two',
        'amount | 0',
        '',
      ].join('\n'),
    );
    expect(formatExpanded({ columns: rs.columns, rows: [] })).toBe('(0 rows)\n');
  });
});

describe('formatCsv', () => {
  it('quotes per RFC 4180 and tells NULL (empty) from the empty string ("")', () => {
    const csv = formatCsv({
      columns: [
        { name: 'a', typeOid: TEXT },
        { name: 'b,c', typeOid: TEXT },
      ],
      rows: [
        [null, ''],
        ['x "y"', 'p\nq'],
        [' pad', '日本'],
      ],
    });
    expect(csv).toBe('a,"b,c"\n,""\n"x ""y""","p\nq"\n" pad",日本\n');
  });

  it('round-trips through a simple RFC 4180 reader', () => {
    const field = fc.option(fc.string({ unit: fc.constantFrom('a', ',', '"', '\n', '\r', ' ', '日') }), { nil: null });
    fc.assert(
      fc.property(fc.array(fc.array(field, { minLength: 2, maxLength: 2 }), { maxLength: 5 }), (rows) => {
        const text = formatCsv({ columns: [{ name: 'a', typeOid: TEXT }, { name: 'b', typeOid: TEXT }], rows });
        expect(readCsv(text)).toEqual([['a', 'b'], ...rows]);
      }),
      { numRuns: 300 },
    );
  });
});

/** RFC 4180 reader: an unquoted empty field is NULL. */
function readCsv(text: string): (string | null)[][] {
  const rows: (string | null)[][] = [];
  let row: (string | null)[] = [];
  let i = 0;
  while (i < text.length) {
    let v: string | null;
    if (text[i] === '"') {
      v = '';
      i++;
      for (;;) {
        if (text[i] === '"' && text[i + 1] === '"') {
          v += '"';
          i += 2;
        } else if (text[i] === '"') {
          i++;
          break;
        } else v += text[i++];
      }
    } else {
      let j = i;
      while (j < text.length && text[j] !== ',' && text[j] !== '\n') j++;
      v = j === i ? null : text.slice(i, j);
      i = j;
    }
    row.push(v);
    if (text[i] === ',') i++;
    else {
      rows.push(row);
      row = [];
      i++;
    }
  }
  return rows;
}

describe('formatTsv', () => {
  it('escapes tab, newline, CR and backslash; NULL is NULL', () => {
    const tsv = formatTsv({
      columns: [
        { name: 'a', typeOid: TEXT },
        { name: 'b', typeOid: INT8 },
      ],
      rows: [
        ['x\ty', '1'],
        ['p\nq\\r\r', null],
        ['日本', ''],
      ],
    });
    expect(tsv).toBe('a\tb\nx\\ty\t1\np\\nq\\\\r\\r\tNULL\n日本\t\n');
  });
});

describe('command tags', () => {
  it('prefers the server text and rebuilds it otherwise', () => {
    expect(formatCommandTag('CREATE TABLE', 'CREATE', null)).toBe('CREATE TABLE');
    expect(formatCommandTag(undefined, 'INSERT', 3)).toBe('INSERT 0 3');
    expect(formatCommandTag(undefined, 'UPDATE', 1)).toBe('UPDATE 1');
    expect(formatCommandTag(undefined, 'BEGIN', null)).toBe('BEGIN');
  });
});

describe('error text', () => {
  it('carries SQLSTATE, the line and a caret under the position, DETAIL and HINT', () => {
    expect(formatError({ message: 'syntax error at or near "FORM"', code: '42601', position: '16' }, 'SELECT 1\n  , 2 FORM t')).toBe(
      'ERROR: syntax error at or near "FORM"\nSQLSTATE: 42601\nLINE 2:   , 2 FORM t\n              ^\n',
    );
    expect(formatError({ message: 'duplicate key value', code: '23505', detail: 'Key (id)=(1) already exists.', hint: 'try another' }, 'INSERT …')).toBe(
      'ERROR: duplicate key value\nSQLSTATE: 23505\nDETAIL: Key (id)=(1) already exists.\nHINT: try another\n',
    );
    // the caret counts display columns: a wide character before it takes two
    expect(formatError({ message: 'm', code: '42601', position: '12' }, "SELECT '日' x")).toBe("ERROR: m\nSQLSTATE: 42601\nLINE 1: SELECT '日' x\n                    ^\n");
  });
});

describe('prompts and connection flags', () => {
  it('shows the transaction status', () => {
    expect(promptFor('root@h:1/db', 'I')).toBe('root@h:1/db> ');
    expect(promptFor('root@h:1/db', 'T')).toBe('root@h:1/db OPEN> ');
    expect(promptFor('root@h:1/db', 'E')).toBe('root@h:1/db ERROR> ');
    expect(continuationPrompt('root@h:1/db> ')).toBe('          -> ');
  });

  it('resolves --url, CAIRN_URL and the PG* variables like psql', () => {
    expect(resolveConnection({}, {})).toEqual({ host: '127.0.0.1', port: 26257, user: 'root', database: 'defaultdb', ssl: false });
    expect(resolveConnection({}, { PGHOST: 'db1', PGPORT: '5433', PGUSER: 'bob', PGDATABASE: 'shop', PGPASSWORD: 'pw' })).toEqual({
      host: 'db1',
      port: 5433,
      user: 'bob',
      database: 'shop',
      password: 'pw',
      ssl: false,
    });
    expect(resolveConnection({}, { CAIRN_URL: 'postgresql://u:p%40ss@[::1]:7/d?sslmode=require', PGHOST: 'ignored' })).toEqual({
      host: '::1',
      port: 7,
      user: 'u',
      database: 'd',
      password: 'p@ss',
      ssl: { rejectUnauthorized: false },
    });
    expect(resolveConnection({ url: 'postgres://a@h/x?sslmode=verify-full', user: 'b', database: 'y', insecure: true }, {})).toEqual({
      host: 'h',
      port: 26257,
      user: 'b',
      database: 'y',
      ssl: false,
    });
    expect(resolveConnection({}, { PGHOST: '/var/run/postgresql' }).host).toBe('/var/run/postgresql');
    expect(() => resolveConnection({ url: 'mysql://x' }, {})).toThrow(/scheme/);
  });
});

/**
 * The SQL shell's result formatter: one result set (column names, raw text
 * values as the server sent them, NULL as null) rendered as text.
 *
 *   table (psql's aligned format; the default on a terminal):
 *
 *      id |  name   | note
 *     ----+---------+------
 *       1 | ab      | NULL
 *      22 | 日本    | x   +
 *         |         | y
 *     (2 rows)
 *
 *     Header names centred; numeric columns (by type OID) right-aligned,
 *     others left-aligned; widths are display widths (East Asian wide and
 *     fullwidth characters count 2, combining marks 0). A value holding
 *     newlines spans several lines, and every line but its last ends in `+`
 *     (as psql marks a wrapped cell). NULL is shown as `NULL`.
 *
 *   expanded (`\x`):
 *
 *     -[ RECORD 1 ]-
 *     id   | 1
 *     name | ab
 *
 *   csv (RFC 4180): header line, then one line per row, CRLF-free (`\n`); a
 *     field is quoted when it holds `,` `"` CR LF or leading/trailing space,
 *     `"` doubled inside. NULL is an empty unquoted field and the empty string
 *     is `""`, so the two stay distinguishable (psql's --csv choice too).
 *
 *   tsv: header line, then rows, fields separated by TAB; `\`, TAB, LF and CR
 *     inside a value are written `\\` `\t` `\n` `\r` so a row stays one line;
 *     NULL is `NULL` (as cockroach sql's tsv).
 *
 * csv and tsv are line-oriented (formatRowLine): the shell streams them
 * row by row, so an export of any size needs no memory for its rows; table
 * and expanded display need every row first, for the column widths.
 *
 * A statement without a result set is shown by its command tag
 * (`INSERT 0 3`, `CREATE TABLE`) in every format; see formatCommandTag.
 *
 * Ownership: pure functions of their inputs; the caller writes the text.
 */

export type OutputFormat = 'table' | 'csv' | 'tsv';

export const OUTPUT_FORMATS: readonly OutputFormat[] = ['table', 'csv', 'tsv'];

/** A result set as the shell holds it: raw text values, null for NULL. */
export interface ResultSet {
  readonly columns: readonly ResultColumn[];
  readonly rows: readonly (readonly (string | null)[])[];
}

export interface ResultColumn {
  readonly name: string;
  /** PostgreSQL type OID (decides alignment). */
  readonly typeOid: number;
}

/** int2, int4, int8, oid, float4, float8, numeric, money. */
const NUMERIC_OIDS = new Set([20, 21, 23, 26, 700, 701, 1700, 790]);

export function isNumericType(oid: number): boolean {
  return NUMERIC_OIDS.has(oid);
}

/**
 * Wide (2-column) code point ranges, from Unicode's EastAsianWidth W and F
 * classes, merged to the blocks a terminal renders double-width.
 */
const WIDE_RANGES: readonly (readonly [number, number])[] = [
  [0x1100, 0x115f],
  [0x231a, 0x231b],
  [0x2329, 0x232a],
  [0x23e9, 0x23ec],
  [0x23f0, 0x23f0],
  [0x23f3, 0x23f3],
  [0x25fd, 0x25fe],
  [0x2614, 0x2615],
  [0x2648, 0x2653],
  [0x267f, 0x267f],
  [0x2693, 0x2693],
  [0x26a1, 0x26a1],
  [0x26aa, 0x26ab],
  [0x26bd, 0x26be],
  [0x26c4, 0x26c5],
  [0x26ce, 0x26ce],
  [0x26d4, 0x26d4],
  [0x26ea, 0x26ea],
  [0x26f2, 0x26f3],
  [0x26f5, 0x26f5],
  [0x26fa, 0x26fa],
  [0x26fd, 0x26fd],
  [0x2705, 0x2705],
  [0x270a, 0x270b],
  [0x2728, 0x2728],
  [0x274c, 0x274c],
  [0x274e, 0x274e],
  [0x2753, 0x2755],
  [0x2757, 0x2757],
  [0x2795, 0x2797],
  [0x27b0, 0x27b0],
  [0x27bf, 0x27bf],
  [0x2b1b, 0x2b1c],
  [0x2b50, 0x2b50],
  [0x2b55, 0x2b55],
  [0x2e80, 0x303e],
  [0x3041, 0x33ff],
  [0x3400, 0x4dbf],
  [0x4e00, 0x9fff],
  [0xa000, 0xa4cf],
  [0xa960, 0xa97f],
  [0xac00, 0xd7a3],
  [0xf900, 0xfaff],
  [0xfe10, 0xfe19],
  [0xfe30, 0xfe6f],
  [0xff00, 0xff60],
  [0xffe0, 0xffe6],
  [0x16fe0, 0x16fe4],
  [0x17000, 0x18cff],
  [0x1b000, 0x1b2ff],
  [0x1f004, 0x1f004],
  [0x1f0cf, 0x1f0cf],
  [0x1f18e, 0x1f18e],
  [0x1f191, 0x1f19a],
  [0x1f200, 0x1f251],
  [0x1f300, 0x1f64f],
  [0x1f680, 0x1f6ff],
  [0x1f7e0, 0x1f7eb],
  [0x1f90c, 0x1f9ff],
  [0x1fa70, 0x1faff],
  [0x20000, 0x2fffd],
  [0x30000, 0x3fffd],
];

function isWide(cp: number): boolean {
  let lo = 0;
  let hi = WIDE_RANGES.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = WIDE_RANGES[mid] as readonly [number, number];
    if (cp < r[0]) hi = mid - 1;
    else if (cp > r[1]) lo = mid + 1;
    else return true;
  }
  return false;
}

const ZERO_WIDTH = /[\p{Mn}\p{Me}\u200b-\u200f\u2028-\u202e\u2060-\u2064\ufeff\ufe00-\ufe0f]/u;

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** Terminal columns a string occupies (no newlines expected). */
export function displayWidth(s: string): number {
  if (PRINTABLE_ASCII.test(s)) return s.length;
  let w = 0;
  for (const ch of s) {
    const cp = ch.codePointAt(0) as number;
    if (cp < 0x7f) {
      w += cp >= 0x20 ? 1 : 0;
    } else if (cp < 0xa0) {
      // C1 controls take no column
    } else if (ZERO_WIDTH.test(ch)) {
      // combining marks, joiners, variation selectors
    } else {
      w += isWide(cp) ? 2 : 1;
    }
  }
  return w;
}

function pad(s: string, width: number, align: 'left' | 'right' | 'center'): string {
  const gap = width - displayWidth(s);
  if (gap <= 0) return s;
  if (align === 'right') return ' '.repeat(gap) + s;
  if (align === 'left') return s + ' '.repeat(gap);
  const left = gap >> 1;
  return ' '.repeat(left) + s + ' '.repeat(gap - left);
}

const NULL_LINES: readonly string[] = ['NULL'];

function linesOf(v: string | null): readonly string[] {
  if (v === null) return NULL_LINES;
  if (!v.includes('\n') && !v.includes('\r')) return [v];
  return v.replace(/\r\n?/g, '\n').split('\n');
}

/** `(1 row)` / `(N rows)`. */
export function rowCountFooter(n: number): string {
  return `(${n} ${n === 1 ? 'row' : 'rows'})`;
}

/** psql's aligned table with a header separator and a row-count footer. */
export function formatTable(rs: ResultSet): string {
  const ncol = rs.columns.length;
  const header = rs.columns.map((c) => linesOf(c.name));
  const cells = rs.rows.map((row) => row.map(linesOf));
  const widths = rs.columns.map((_, j) => {
    let w = 0;
    for (const l of header[j] as readonly string[]) w = Math.max(w, displayWidth(l));
    for (const row of cells) for (const l of row[j] as readonly string[]) w = Math.max(w, displayWidth(l));
    return w;
  });
  const aligns = rs.columns.map((c) => (isNumericType(c.typeOid) ? 'right' : 'left') as 'left' | 'right');
  const out: string[] = [];
  const last = ncol - 1;
  // The last column gets no padding on its right (psql leaves no trailing blanks).
  const emit = (row: readonly (readonly string[])[], align: (j: number) => 'left' | 'right' | 'center'): void => {
    let height = 1;
    for (const c of row) if (c.length > height) height = c.length;
    for (let k = 0; k < height; k++) {
      let line = '';
      for (let j = 0; j < ncol; j++) {
        const cell = row[j] as readonly string[];
        const text = cell[k] ?? '';
        const more = k < cell.length - 1;
        const al = align(j);
        line += j === 0 ? ' ' : '| ';
        if (j === last && !more && (al !== 'right' || text === '')) line += al === 'center' ? pad(text, widths[j] as number, 'center').trimEnd() : text;
        else line += pad(text, widths[j] as number, al) + (more ? '+' : j === last ? '' : ' ');
      }
      out.push(line);
    }
  };
  emit(header, () => 'center');
  out.push(widths.map((w) => '-'.repeat(w + 2)).join('+'));
  for (const row of cells) emit(row, (j) => aligns[j] as 'left' | 'right');
  out.push(rowCountFooter(rs.rows.length));
  return `${out.join('\n')}\n`;
}

/** psql's expanded display (`\x`): one block per row. */
export function formatExpanded(rs: ResultSet): string {
  if (rs.rows.length === 0) return '(0 rows)\n';
  const nameWidth = rs.columns.reduce((w, c) => Math.max(w, displayWidth(c.name)), 0);
  const cells = rs.rows.map((row) => row.map(linesOf));
  // As psql, every record's title line is as wide as the widest name + value.
  let valueWidth = 0;
  for (const row of cells) for (const ls of row) for (const l of ls) valueWidth = Math.max(valueWidth, displayWidth(l));
  const out: string[] = [];
  cells.forEach((valueLines, i) => {
    const title = `-[ RECORD ${i + 1} ]`;
    out.push(title + '-'.repeat(Math.max(0, nameWidth + 3 + valueWidth - displayWidth(title))));
    rs.columns.forEach((c, j) => {
      const ls = valueLines[j] as readonly string[];
      ls.forEach((l, k) => {
        const name = k === 0 ? c.name : '';
        out.push(`${pad(name, nameWidth, 'left')} | ${l}${k < ls.length - 1 ? '+' : ''}`.replace(/ +$/, ''));
      });
    });
  });
  return `${out.join('\n')}\n`;
}

function csvField(v: string | null): string {
  if (v === null) return '';
  if (v === '' || /[",\r\n]/.test(v) || /^\s|\s$/.test(v)) return `"${v.replace(/"/g, '""')}"`;
  return v;
}

/** RFC 4180 CSV with a header line. */
export function formatCsv(rs: ResultSet): string {
  let s = formatHeaderLine('csv', rs.columns);
  for (const row of rs.rows) s += formatRowLine('csv', row);
  return s;
}

const TSV_SPECIAL = /[\\\t\n\r]/;

function tsvField(v: string | null): string {
  if (v === null) return 'NULL';
  if (!TSV_SPECIAL.test(v)) return v;
  return v.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'));
}

/** Tab-separated values with a header line. */
export function formatTsv(rs: ResultSet): string {
  let s = formatHeaderLine('tsv', rs.columns);
  for (const row of rs.rows) s += formatRowLine('tsv', row);
  return s;
}

/** One row of a line-oriented format (csv, tsv), newline included: rows can be streamed. */
export function formatRowLine(format: 'csv' | 'tsv', row: readonly (string | null)[]): string {
  return format === 'csv' ? `${row.map(csvField).join(',')}\n` : `${row.map(tsvField).join('\t')}\n`;
}

/** The header line of a line-oriented format. */
export function formatHeaderLine(format: 'csv' | 'tsv', columns: readonly ResultColumn[]): string {
  return formatRowLine(format, columns.map((c) => c.name));
}

export function formatResult(rs: ResultSet, format: OutputFormat, expanded = false): string {
  switch (format) {
    case 'table':
      return expanded ? formatExpanded(rs) : formatTable(rs);
    case 'csv':
      return formatCsv(rs);
    case 'tsv':
      return formatTsv(rs);
  }
}

/**
 * The command tag as the server sent it (`INSERT 0 3`, `UPDATE 1`,
 * `CREATE TABLE`), or, when only the parsed pieces are known, rebuilt from
 * them (`INSERT` carries the oid field, always 0).
 */
export function formatCommandTag(tag: string | undefined, command: string | null, rowCount: number | null): string {
  if (tag !== undefined && tag !== '') return tag;
  if (command === null || command === '') return 'OK';
  if (command === 'INSERT') return `INSERT 0 ${rowCount ?? 0}`;
  return rowCount === null ? command : `${command} ${rowCount}`;
}

/**
 * sql/exec/copy.ts — COPY … FROM STDIN and COPY … TO STDOUT (text and CSV).
 *
 * COPY FROM streams: CopyData payloads are parsed as they arrive (records may
 * span payloads; UTF-8 sequences split across payloads are reassembled), and
 * every BATCH_ROWS rows (or BATCH_BYTES of input) are inserted with one KV
 * batch (mutation.ts insertRows: primary cputs + index entries), the next
 * batch being parsed while the previous one is in flight (one KV call at a
 * time, KVTxn's rule: an error waits for the call in flight before it is
 * thrown). All batches run in the statement's one transaction — as in PostgreSQL, a failed COPY
 * leaves nothing behind, and a COPY inside BEGIN … COMMIT commits with it.
 * The cost is that the transaction's write set grows with the import (the KV
 * layer holds its intents until commit; its coordinator condenses the lock
 * and refresh footprints past their budgets, src/kv/client/lock-footprint.ts,
 * and the intents are resolved in pages after the commit). COPY is never retried
 * transparently: its input is consumed (a 40001 reaches the client).
 *
 * A failure of ours (bad data, 23505, a KV error) ends the COPY at once, as
 * in PostgreSQL: once the batch in flight has settled, the error goes to the
 * client (ErrorResponse, then ReadyForQuery in the simple protocol) without
 * waiting for CopyDone, and the CopyData/CopyDone/CopyFail the client is
 * still sending are ignored by the connection (pgwire/conn.ts). Clients learn
 * of the failure while they still stream, instead of after the last byte.
 *
 * Text format: one line per row, fields split by the delimiter (tab), `\N`
 * is NULL, backslash escapes \b \f \n \r \t \v \\ \ooo \xhh and any other
 * escaped character stands for itself; a `\.` line ends the data.
 * CSV: delimiter `,`, quote `"` (doubled inside quotes, or ESCAPE), an
 * unquoted empty field is NULL (or the NULL string), quoted fields may
 * hold newlines; HEADER skips the first line.
 * COPY TO writes the same formats (text escapes \\ \t \n \r; CSV quotes a
 * field holding the delimiter, a quote, CR/LF, or equal to the NULL string).
 */
import { StringDecoder } from 'node:string_decoder';
import { SqlError, unimplemented } from '../parser/sql-error.js';
import type { TableEntry } from '../catalog/catalog.js';
import { tableRules } from '../plan/planner.js';
import { datumFromText, type Datum } from '../sem/datum.js';
import type { SqlType } from '../types/type.js';
import { insertRows } from './mutation.js';
import type { ExecCtx, Row } from './operators.js';

export const BATCH_ROWS = 1000;
export const BATCH_BYTES = 1 << 20;

export interface CopyOptions {
  readonly csv: boolean;
  readonly delimiter: string;
  readonly nullString: string;
  readonly header: boolean;
  readonly quote: string;
  readonly escape: string;
}

function truthy(v: string | undefined): boolean {
  return v === undefined || ['true', 'on', '1', 'yes'].includes(v.toLowerCase());
}

/** COPY's WITH options (PostgreSQL's names) → CopyOptions; 0A000 for binary. */
export function copyOptions(opts: readonly { readonly name: string; readonly value: string | undefined }[]): CopyOptions {
  let csv = false;
  let delimiter: string | undefined;
  let nullString: string | undefined;
  let header = false;
  let quote = '"';
  let escape: string | undefined;
  for (const o of opts) {
    switch (o.name) {
      case 'format': {
        const f = (o.value ?? '').toLowerCase();
        if (f === 'binary') throw unimplemented('COPY BINARY');
        if (f !== 'csv' && f !== 'text') throw new SqlError('sql.invalid_parameter_value', '22023', `COPY format "${o.value}" not recognized`);
        csv = f === 'csv';
        break;
      }
      case 'csv':
        csv = true;
        break;
      case 'binary':
        throw unimplemented('COPY BINARY');
      case 'delimiter':
        delimiter = o.value;
        break;
      case 'null':
        nullString = o.value ?? '';
        break;
      case 'header':
        header = truthy(o.value);
        break;
      case 'quote':
        quote = o.value ?? '"';
        break;
      case 'escape':
        escape = o.value;
        break;
      case 'encoding':
        if ((o.value ?? '').toLowerCase().replace('-', '') !== 'utf8') throw unimplemented(`COPY ENCODING ${o.value}`);
        break;
      case 'freeze':
        // FREEZE (pgbench -i sends it) only skips vacuum work in PostgreSQL: accepted, no effect.
        break;
      default:
        throw new SqlError('sql.syntax_error', '42601', `option "${o.name}" not recognized`);
    }
  }
  if (header && !csv) throw new SqlError('sql.feature_not_supported', '0A000', 'COPY HEADER available only in CSV mode');
  const d = delimiter ?? (csv ? ',' : '\t');
  if (d.length !== 1) throw new SqlError('sql.feature_not_supported', '0A000', 'COPY delimiter must be a single one-byte character');
  return { csv, delimiter: d, nullString: nullString ?? (csv ? '' : '\\N'), header, quote, escape: escape ?? quote };
}

const TEXT_ESCAPES: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' };

/** Splits one text-format line into fields (NULL as null), undoing backslash escapes. */
function textFields(line: string, o: CopyOptions): (string | null)[] {
  // Fast path: no escapes, so fields are plain slices.
  if (line.indexOf('\\') < 0) {
    const parts: (string | null)[] = line.split(o.delimiter);
    for (let i = 0; i < parts.length; i++) if (parts[i] === o.nullString) parts[i] = null;
    return parts;
  }
  const out: (string | null)[] = [];
  let cur = '';
  let raw = '';
  for (let i = 0; i < line.length; i++) {
    const ch = line[i] as string;
    if (ch === o.delimiter) {
      out.push(raw === o.nullString ? null : cur);
      cur = '';
      raw = '';
      continue;
    }
    if (ch !== '\\' || i + 1 >= line.length) {
      cur += ch;
      raw += ch;
      continue;
    }
    const n = line[++i] as string;
    raw += '\\' + n;
    if (n in TEXT_ESCAPES) cur += TEXT_ESCAPES[n];
    else if (n >= '0' && n <= '7') {
      let j = i;
      while (j < i + 3 && j < line.length && (line[j] as string) >= '0' && (line[j] as string) <= '7') j++;
      cur += String.fromCharCode(parseInt(line.slice(i, j), 8));
      raw += line.slice(i + 1, j);
      i = j - 1;
    } else if (n === 'x' && /^[0-9a-fA-F]/.test(line[i + 1] ?? '')) {
      const m = /^[0-9a-fA-F]{1,2}/.exec(line.slice(i + 1)) as RegExpExecArray;
      cur += String.fromCharCode(parseInt(m[0], 16));
      raw += m[0];
      i += m[0].length;
    } else cur += n;
  }
  out.push(raw === o.nullString ? null : cur);
  return out;
}

/**
 * Streaming record parser: feed() text as it arrives, records come out
 * complete; finish() flushes the last unterminated one.
 */
export class CopyParser {
  private buf = '';
  private done = false;
  private skipHeader: boolean;
  // CSV state, kept across feeds.
  private fields: (string | null)[] = [];
  private field = '';
  private quoted = false;
  private inQuotes = false;
  private afterQuote = false;

  constructor(private readonly o: CopyOptions) {
    this.skipHeader = o.header;
  }

  /** True once the `\.` end marker was seen (later input is ignored). */
  get ended(): boolean {
    return this.done;
  }

  feed(s: string, out: (string | null)[][]): void {
    if (this.done) return;
    if (this.o.csv) this.feedCsv(s, out);
    else this.feedText(s, out);
  }

  finish(out: (string | null)[][]): void {
    if (this.done) return;
    if (this.o.csv) {
      if (this.inQuotes) throw new SqlError('sql.bad_copy_file_format', '22P04', 'unterminated CSV quoted field');
      if (this.field !== '' || this.quoted || this.fields.length > 0) this.endCsvRecord(out);
    } else if (this.buf !== '') this.textLine(this.buf, out);
    this.buf = '';
  }

  private emit(rec: (string | null)[], out: (string | null)[][]): void {
    if (this.skipHeader) {
      this.skipHeader = false;
      return;
    }
    out.push(rec);
  }

  private textLine(line0: string, out: (string | null)[][]): void {
    const line = line0.endsWith('\r') ? line0.slice(0, -1) : line0;
    if (line === '\\.') {
      this.done = true;
      return;
    }
    this.emit(textFields(line, this.o), out);
  }

  private feedText(s: string, out: (string | null)[][]): void {
    this.buf += s;
    let start = 0;
    for (;;) {
      const nl = this.buf.indexOf('\n', start);
      if (nl < 0) break;
      this.textLine(this.buf.slice(start, nl), out);
      start = nl + 1;
      if (this.done) break;
    }
    this.buf = this.buf.slice(start);
  }

  private endCsvField(): void {
    const v = this.field;
    this.fields.push(!this.quoted && v === this.o.nullString ? null : v);
    this.field = '';
    this.quoted = false;
    this.afterQuote = false;
  }

  private endCsvRecord(out: (string | null)[][]): void {
    this.endCsvField();
    const rec = this.fields;
    this.fields = [];
    if (rec.length === 1 && rec[0] === '\\.') {
      this.done = true;
      return;
    }
    this.emit(rec, out);
  }

  private feedCsv(s: string, out: (string | null)[][]): void {
    const { delimiter, quote, escape } = this.o;
    for (let i = 0; i < s.length && !this.done; i++) {
      const ch = s[i] as string;
      if (this.inQuotes) {
        if (ch === escape && escape !== quote && s[i + 1] !== undefined && (s[i + 1] === quote || s[i + 1] === escape)) {
          this.field += s[++i];
        } else if (ch === quote) {
          if (s[i + 1] === quote && escape === quote) {
            this.field += quote;
            i++;
          } else if (s[i + 1] === undefined && escape === quote) {
            // A quote at the end of a payload: the next one decides (doubled or closing).
            this.pendingQuote = true;
            this.inQuotes = false;
            this.afterQuote = true;
          } else {
            this.inQuotes = false;
            this.afterQuote = true;
          }
        } else this.field += ch;
        continue;
      }
      if (this.pendingQuote) {
        this.pendingQuote = false;
        if (ch === quote) {
          this.field += quote;
          this.inQuotes = true;
          this.afterQuote = false;
          continue;
        }
      }
      if (ch === delimiter) this.endCsvField();
      else if (ch === '\n') this.endCsvRecord(out);
      else if (ch === '\r') {
        if (s[i + 1] === '\n') i++;
        this.endCsvRecord(out);
      } else if (ch === quote && this.field === '' && !this.afterQuote) {
        this.inQuotes = true;
        this.quoted = true;
      } else this.field += ch;
    }
  }

  private pendingQuote = false;
}

/** Parses COPY FROM input and inserts it in batches; returns the row count. */
export async function copyFrom(table: TableEntry, columns: readonly string[], o: CopyOptions, data: AsyncIterable<Uint8Array>, ctx: ExecCtx): Promise<number> {
  const cols = table.desc.columns;
  const ords =
    columns.length > 0
      ? columns.map((n) => {
          const i = cols.findIndex((c) => c.name === n);
          if (i < 0) throw new SqlError('sql.undefined_column', '42703', `column "${n}" of relation "${table.desc.name}" does not exist`);
          return i;
        })
      : cols.map((c, i) => (c.hidden ? -1 : i)).filter((i) => i >= 0);
  const types = table.codec.types;
  const defaults = tableRules(table).defaults;
  const given = new Uint8Array(cols.length);
  for (const i of ords) given[i] = 1;
  const parser = new CopyParser(o);
  const decoder = new StringDecoder('utf8');
  let pending: Row[] = [];
  let pendingBytes = 0;
  let count = 0;

  const toRow = (rec: (string | null)[]): Row => {

    if (rec.length < ords.length) {
      throw new SqlError('sql.bad_copy_file_format', '22P04', `missing data for column "${cols[ords[rec.length] as number]?.name}"`);
    }
    if (rec.length > ords.length) throw new SqlError('sql.bad_copy_file_format', '22P04', 'extra data after last expected column');
    const row: Datum[] = new Array(cols.length).fill(null);
    for (let j = 0; j < ords.length; j++) {
      const s = rec[j] as string | null;
      const i = ords[j] as number;
      row[i] = s === null ? null : datumFromText(s, types[i] as SqlType);
    }
    for (let i = 0; i < cols.length; i++) if (given[i] === 0) row[i] = (defaults[i] as (r: readonly Datum[], e: typeof ctx.env) => Datum)([], ctx.env);
    return row;
  };
  // The batch in flight (at most one): parsing goes on meanwhile. Its failure is kept (never an unhandled rejection)
  // and thrown by the next settle().
  let inflight: Promise<void> | null = null;
  let failure: { readonly e: unknown } | null = null;
  const settle = async (): Promise<void> => {
    const p = inflight;
    inflight = null;
    if (p !== null) await p;
    if (failure !== null) throw failure.e;
  };
  const flush = async (): Promise<void> => {
    await settle();
    if (pending.length === 0) return;
    ctx.checkCancel();
    const rows = pending;
    pending = [];
    pendingBytes = 0;
    inflight = insertRows(table, rows, ctx).then(
      () => {
        count += rows.length;
      },
      (e: unknown) => {
        failure = { e };
      },
    );
  };
  const recs: (string | null)[][] = [];
  const take = async (): Promise<void> => {
    for (const r of recs) pending.push(toRow(r));
    recs.length = 0;
    if (pending.length >= BATCH_ROWS || pendingBytes >= BATCH_BYTES) await flush();
  };
  try {
    for await (const chunk of data) {
      pendingBytes += chunk.length;
      parser.feed(decoder.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)), recs);
      await take();
    }
    parser.feed(decoder.end(), recs);
    parser.finish(recs);
    await take();
    await flush();
    await settle();
    return count;
  } catch (e) {
    // No KV call may be left running when the statement fails (the session then rolls the transaction back).
    await settle().catch(() => undefined);
    throw e;
  }
}

function csvField(v: string, o: CopyOptions): string {
  const needs = v === o.nullString || v.includes(o.delimiter) || v.includes(o.quote) || v.includes('\n') || v.includes('\r') || (v.length > 0 && v === '\\.');
  if (!needs) return v;
  let s = '';
  for (const ch of v) s += ch === o.quote || ch === o.escape ? o.escape + ch : ch;
  return o.quote + s + o.quote;
}

function textField(v: string, o: CopyOptions): string {
  let s = '';
  for (const ch of v) {
    if (ch === '\\') s += '\\\\';
    else if (ch === '\n') s += '\\n';
    else if (ch === '\r') s += '\\r';
    else if (ch === '\t') s += '\\t';
    else if (ch === o.delimiter) s += '\\' + ch;
    else s += ch;
  }
  return s;
}

/** One COPY TO line for a row of text-format values (null = NULL), newline included. */
export function copyLine(values: readonly (Uint8Array | string | null)[], o: CopyOptions): string {
  let line = '';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) line += o.delimiter;
    const v = values[i];
    if (v === null || v === undefined) line += o.nullString;
    else {
      const s = typeof v === 'string' ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8');
      line += o.csv ? csvField(s, o) : textField(s, o);
    }
  }
  return line + '\n';
}

/** The CSV HEADER line of COPY TO. */
export function copyHeader(names: readonly string[], o: CopyOptions): string {
  return names.map((n) => csvField(n, o)).join(o.delimiter) + '\n';
}

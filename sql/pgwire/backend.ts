/**
 * Backend-message serializer (PostgreSQL docs §55.7 "Message Formats").
 *
 * `BackendWriter` appends messages to one growing buffer; the connection
 * `take()`s the accumulated bytes once per flush and hands them to the socket
 * in a single write. Nothing here allocates a Buffer per message or per row —
 * DataRow is the hot path — and a large flush is handed over without a copy.
 *
 * Every message except the one-byte SSL/GSSENC answer is framed as
 *
 *   ┌────────┬──────────────┬──────────────────────────────┐
 *   │ byte1  │ int32 length │ body (length − 4 bytes)      │
 *   └────────┴──────────────┴──────────────────────────────┘
 *
 *   'R' Authentication  int32 0 Ok | 3 CleartextPassword |
 *                       10 SASL (cstring mechanism)* 0x00 |
 *                       11 SASLContinue bytes | 12 SASLFinal bytes
 *   'S' ParameterStatus cstring name, cstring value
 *   'K' BackendKeyData  int32 pid, int32 secret
 *   'Z' ReadyForQuery   byte 'I' | 'T' | 'E'
 *   'T' RowDescription  int16 n, n × (cstring name, int32 table oid,
 *                       int16 attnum, int32 type oid, int16 typlen,
 *                       int32 typmod, int16 format)
 *   'D' DataRow         int16 n, n × (int32 len | −1 for NULL, bytes)
 *                       (text values may be given as strings: UTF-8 here)
 *   'C' CommandComplete cstring tag        'I' EmptyQueryResponse
 *   'E' ErrorResponse / 'N' NoticeResponse  (byte field code, cstring)* 0x00
 *   '1' ParseComplete '2' BindComplete '3' CloseComplete 'n' NoData
 *   's' PortalSuspended  'c' CopyDone      'd' CopyData bytes
 *   't' ParameterDescription  int16 n, n × int32 type oid
 *   'G' CopyInResponse / 'H' CopyOutResponse  int8 format, int16 n, n × int16
 *   'v' NegotiateProtocolVersion  int32 minor, int32 n, n × cstring option
 *
 * Ownership: a Buffer returned by `take()` belongs to the caller; the writer
 * never touches it again.
 */
import { assert } from '../../src/util/index.js';
import type { PgErrorFields } from './errors.js';
import type { FormatCode } from './frontend.js';

export type TxnStatus = 'I' | 'T' | 'E';

/** One column of a RowDescription. */
export interface ColumnDescriptor {
  readonly name: string;
  /** OID of the table the column comes from, or 0. */
  readonly tableOid: number;
  /** Attribute number of the column in that table, or 0. */
  readonly columnAttr: number;
  readonly typeOid: number;
  /** pg_type.typlen: −1 for varlena, −2 for cstring. */
  readonly typeSize: number;
  readonly typeModifier: number;
  /** Format of the values sent for this column (0 for Describe of a statement). */
  readonly format: FormatCode;
}

/** Severity words PostgreSQL sends in the 'S' and 'V' fields. */
export type Severity = 'ERROR' | 'FATAL' | 'PANIC' | 'WARNING' | 'NOTICE' | 'DEBUG' | 'INFO' | 'LOG';

/** The fields of an ErrorResponse or NoticeResponse. */
export interface ErrorFields extends PgErrorFields {
  readonly severity: Severity;
  /** SQLSTATE, five characters. */
  readonly code: string;
  readonly message: string;
  readonly file?: string;
  readonly line?: number;
  readonly routine?: string;
}

const INITIAL_CAPACITY = 16 * 1024;
/** take() copies outputs up to this size (Node's pool serves them cheaply). */
const COPY_THRESHOLD = 4096;
const MAX_RETAINED_CAPACITY = 1 << 20;

/** RowDescription bodies of long-lived column arrays (see rowDescription's `reuse`); dropped with the arrays. */
const encodedRowDescriptions = new WeakMap<readonly ColumnDescriptor[], Buffer>();

/** A single 'N' (or 'S' when TLS follows): the answer to SSLRequest / GSSENCRequest. */
export function sslResponse(accept: boolean): Buffer {
  return Buffer.from(accept ? 'S' : 'N', 'latin1');
}

export class BackendWriter {
  private buf: Buffer;
  private len = 0;

  constructor(private readonly initialCapacity = INITIAL_CAPACITY) {
    this.buf = Buffer.allocUnsafe(initialCapacity);
  }

  /** Bytes written since the last take(). */
  get length(): number {
    return this.len;
  }

  /**
   * The bytes written so far. Small outputs (a ReadyForQuery round) are
   * copied into a pooled buffer and the writer keeps its own; large ones (row
   * streams) are handed over without a copy and the writer continues in a
   * new buffer of the same capacity, so a stream does not re-grow each flush.
   */
  take(): Buffer {
    const n = this.len;
    this.len = 0;
    if (n <= COPY_THRESHOLD) {
      const out = Buffer.allocUnsafe(n);
      this.buf.copy(out, 0, 0, n);
      // An idle connection gives back what a big result made it grow to.
      if (this.buf.length > 4 * this.initialCapacity) this.buf = Buffer.allocUnsafe(this.initialCapacity);
      return out;
    }
    const out = this.buf.subarray(0, n);
    this.buf = Buffer.allocUnsafe(Math.min(this.buf.length, MAX_RETAINED_CAPACITY));
    return out;
  }

  /** Drops everything written after `length` (a rewind to an earlier length()). */
  truncate(length: number): void {
    assert(length >= 0 && length <= this.len, 'pgwire: truncate beyond the written bytes');
    this.len = length;
  }

  private ensure(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < this.len + n) cap *= 2;
    const next = Buffer.allocUnsafe(cap);
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  /** Writes the type byte and a length placeholder; returns where the length goes. */
  private begin(type: number, maxBody: number): number {
    this.ensure(5 + maxBody);
    this.buf[this.len] = type;
    const at = this.len + 1;
    this.len += 5;
    return at;
  }

  private end(at: number): void {
    this.buf.writeInt32BE(this.len - at, at);
  }

  private int8(v: number): void {
    this.buf[this.len++] = v;
  }

  private int16(v: number): void {
    this.buf.writeInt16BE(v, this.len);
    this.len += 2;
  }

  private int32(v: number): void {
    this.buf.writeInt32BE(v, this.len);
    this.len += 4;
  }

  private uint32(v: number): void {
    this.buf.writeUInt32BE(v >>> 0, this.len);
    this.len += 4;
  }

  /** Room was reserved by begin() with maxCString(). */
  private cstring(s: string): void {
    this.len += this.buf.write(s, this.len, 'utf8');
    this.buf[this.len++] = 0;
  }

  private bytes(b: Uint8Array): void {
    this.buf.set(b, this.len);
    this.len += b.length;
  }

  private emptyMessage(type: number): void {
    this.end(this.begin(type, 0));
  }

  private authentication(code: number, data?: Uint8Array): void {
    const at = this.begin(0x52, 4 + (data?.length ?? 0));
    this.int32(code);
    if (data) this.bytes(data);
    this.end(at);
  }

  authenticationOk(): void {
    this.authentication(0);
  }

  authenticationCleartextPassword(): void {
    this.authentication(3);
  }

  authenticationSASL(mechanisms: readonly string[]): void {
    let max = 5;
    for (const m of mechanisms) max += maxCString(m);
    const at = this.begin(0x52, max);
    this.int32(10);
    for (const m of mechanisms) this.cstring(m);
    this.int8(0);
    this.end(at);
  }

  authenticationSASLContinue(data: Uint8Array): void {
    this.authentication(11, data);
  }

  authenticationSASLFinal(data: Uint8Array): void {
    this.authentication(12, data);
  }

  parameterStatus(name: string, value: string): void {
    const at = this.begin(0x53, maxCString(name) + maxCString(value));
    this.cstring(name);
    this.cstring(value);
    this.end(at);
  }

  backendKeyData(processId: number, secretKey: number): void {
    const at = this.begin(0x4b, 8);
    this.int32(processId);
    this.int32(secretKey);
    this.end(at);
  }

  readyForQuery(status: TxnStatus): void {
    const at = this.begin(0x5a, 1);
    this.int8(status.charCodeAt(0));
    this.end(at);
  }

  /**
   * RowDescription. `reuse`: the array is a prepared statement's or portal's
   * (described again on every Bind/Describe/Execute round of the extended
   * protocol), so its encoded body is kept (keyed by the array, which must not
   * be mutated afterwards) and copied instead of re-encoded.
   */
  rowDescription(columns: readonly ColumnDescriptor[], reuse = false): void {
    if (reuse) {
      let body = encodedRowDescriptions.get(columns);
      if (body === undefined) {
        const w = new BackendWriter(64);
        w.rowDescription(columns);
        body = Buffer.from(w.take().subarray(5));
        encodedRowDescriptions.set(columns, body);
      }
      const at = this.begin(0x54, body.length);
      this.bytes(body);
      this.end(at);
      return;
    }
    let max = 2;
    for (const c of columns) max += maxCString(c.name) + 18;
    const at = this.begin(0x54, max);
    this.int16(columns.length);
    for (const c of columns) {
      this.cstring(c.name);
      this.uint32(c.tableOid);
      this.int16(c.columnAttr);
      this.uint32(c.typeOid);
      this.int16(c.typeSize);
      this.int32(c.typeModifier);
      this.int16(c.format);
    }
    this.end(at);
  }

  /**
   * The hot path: one row of values (null is SQL NULL). A string is a value
   * in text format, UTF-8 encoded straight into the output buffer (no Buffer
   * per value); a Uint8Array is sent as it is (binary format, or text already
   * encoded). Room is reserved for the worst case (3 bytes per UTF-16 code
   * unit) and each value's length is written once its bytes are.
   */
  dataRow(values: readonly (Uint8Array | string | null)[]): void {
    const n = values.length;
    let max = 2 + 4 * n;
    for (let i = 0; i < n; i++) {
      const v = values[i];
      if (typeof v === 'string') max += 3 * v.length;
      else if (v) max += v.length;
    }
    const at = this.begin(0x44, max);
    const buf = this.buf;
    let off = this.len;
    buf.writeInt16BE(n, off);
    off += 2;
    for (let i = 0; i < n; i++) {
      const v = values[i];
      if (v === null || v === undefined) {
        buf.writeInt32BE(-1, off);
        off += 4;
      } else if (typeof v === 'string') {
        const len = buf.write(v, off + 4, 'utf8');
        buf.writeInt32BE(len, off);
        off += 4 + len;
      } else {
        buf.writeInt32BE(v.length, off);
        off += 4;
        buf.set(v, off);
        off += v.length;
      }
    }
    this.len = off;
    this.end(at);
  }

  commandComplete(tag: string): void {
    const at = this.begin(0x43, maxCString(tag));
    this.cstring(tag);
    this.end(at);
  }

  emptyQueryResponse(): void {
    this.emptyMessage(0x49);
  }

  errorResponse(fields: ErrorFields): void {
    this.noticeOrError(0x45, fields);
  }

  noticeResponse(fields: ErrorFields): void {
    this.noticeOrError(0x4e, fields);
  }

  private noticeOrError(type: number, f: ErrorFields): void {
    const pairs: [number, string][] = [
      [0x53, f.severity], // 'S' localized severity
      [0x56, f.severity], // 'V' non-localized severity
      [0x43, f.code], // 'C'
      [0x4d, f.message], // 'M'
    ];
    const opt = (code: number, v: string | number | undefined): void => {
      if (v !== undefined) pairs.push([code, String(v)]);
    };
    opt(0x44, f.detail); // 'D'
    opt(0x48, f.hint); // 'H'
    opt(0x50, f.position); // 'P'
    opt(0x70, f.internalPosition); // 'p'
    opt(0x71, f.internalQuery); // 'q'
    opt(0x57, f.where); // 'W'
    opt(0x73, f.schema); // 's'
    opt(0x74, f.table); // 't'
    opt(0x63, f.column); // 'c'
    opt(0x64, f.dataType); // 'd'
    opt(0x6e, f.constraint); // 'n'
    opt(0x46, f.file); // 'F'
    opt(0x4c, f.line); // 'L'
    opt(0x52, f.routine); // 'R'
    let max = 1;
    for (const [, v] of pairs) max += 1 + maxCString(v);
    const at = this.begin(type, max);
    for (const [code, v] of pairs) {
      this.int8(code);
      this.cstring(v);
    }
    this.int8(0);
    this.end(at);
  }

  parseComplete(): void {
    this.emptyMessage(0x31);
  }

  bindComplete(): void {
    this.emptyMessage(0x32);
  }

  closeComplete(): void {
    this.emptyMessage(0x33);
  }

  noData(): void {
    this.emptyMessage(0x6e);
  }

  portalSuspended(): void {
    this.emptyMessage(0x73);
  }

  parameterDescription(typeOids: readonly number[]): void {
    const at = this.begin(0x74, 2 + 4 * typeOids.length);
    this.int16(typeOids.length);
    for (const oid of typeOids) this.uint32(oid);
    this.end(at);
  }

  copyInResponse(overallFormat: FormatCode, columnFormats: readonly FormatCode[]): void {
    this.copyResponse(0x47, overallFormat, columnFormats);
  }

  copyOutResponse(overallFormat: FormatCode, columnFormats: readonly FormatCode[]): void {
    this.copyResponse(0x48, overallFormat, columnFormats);
  }

  private copyResponse(type: number, overall: FormatCode, formats: readonly FormatCode[]): void {
    const at = this.begin(type, 3 + 2 * formats.length);
    this.int8(overall);
    this.int16(formats.length);
    for (const f of formats) this.int16(f);
    this.end(at);
  }

  copyData(data: Uint8Array): void {
    const at = this.begin(0x64, data.length);
    this.bytes(data);
    this.end(at);
  }

  copyDone(): void {
    this.emptyMessage(0x63);
  }

  negotiateProtocolVersion(newestMinor: number, unrecognizedOptions: readonly string[]): void {
    let max = 8;
    for (const o of unrecognizedOptions) max += maxCString(o);
    const at = this.begin(0x76, max);
    this.int32(newestMinor);
    this.int32(unrecognizedOptions.length);
    for (const o of unrecognizedOptions) this.cstring(o);
    this.end(at);
  }
}

/** An upper bound on a string's UTF-8 size plus its NUL (UTF-16 unit → ≤ 3 bytes). */
function maxCString(s: string): number {
  assert(typeof s === 'string', 'pgwire: string field expected');
  return s.length * 3 + 1;
}

/**
 * Frontend-message decoder: the server side of the PostgreSQL v3 protocol
 * (PostgreSQL docs, "Frontend/Backend Protocol", §55.7 "Message Formats").
 *
 * Bytes arrive in arbitrary chunks; `push()` appends them and `next()` returns
 * one decoded message at a time (or undefined when the next one is not
 * complete yet). The decoder never sees a socket.
 *
 * Two framings. Before the StartupMessage ("startup" phase) packets are
 * untagged:
 *
 *   ┌──────────────┬────────────────┬──────────────────────────────┐
 *   │ int32 length │ int32 code     │ body (length − 8 bytes)      │
 *   └──────────────┴────────────────┴──────────────────────────────┘
 *     length counts itself; code = 196608 (3.0) StartupMessage with
 *     body = (cstring name, cstring value)* 0x00
 *     code = 80877103 SSLRequest, 80877104 GSSENCRequest (body empty),
 *     code = 80877102 CancelRequest, body = int32 pid, int32 secret key
 *
 * After it ("normal" phase, which the connection selects with
 * `startNormalPhase()`) every message is tagged:
 *
 *   ┌────────┬──────────────┬──────────────────────────────┐
 *   │ byte1  │ int32 length │ body (length − 4 bytes)      │
 *   │ type   │ (counts self)│                              │
 *   └────────┴──────────────┴──────────────────────────────┘
 *
 *   'Q' Query      cstring sql
 *   'P' Parse      cstring name, cstring sql, int16 n, int32 oid × n
 *   'B' Bind       cstring portal, cstring stmt, int16 nf, int16 fmt × nf,
 *                  int16 np, (int32 len | −1 for NULL, bytes) × np,
 *                  int16 nr, int16 fmt × nr
 *   'D' Describe   byte 'S'|'P', cstring name
 *   'E' Execute    cstring portal, int32 max rows (≤ 0: all)
 *   'C' Close      byte 'S'|'P', cstring name
 *   'S' Sync  'H' Flush  'X' Terminate  'c' CopyDone   (empty bodies)
 *   'd' CopyData   bytes          'f' CopyFail  cstring message
 *   'p' PasswordMessage / SASLInitialResponse / SASLResponse: the body's
 *       meaning depends on the authentication step, so it is returned raw
 *       and read with parsePasswordMessage / parseSASLInitialResponse.
 *   'F' FunctionCall (the legacy fast-path) is not supported: like any
 *       unknown type byte it is a protocol violation.
 *
 * Invariants:
 *   - Every read is bounds-checked against its message; a message whose
 *     fields do not exactly fill its length, an unknown type byte, a length
 *     below the minimum or above `maxMessageSize`, an unterminated string, a
 *     negative count or a format code other than 0/1 raise
 *     ProtocolViolationError (SQLSTATE 08P01) — never another exception.
 *     After one, the decoder is poisoned: the stream cannot be resynchronised.
 *   - Each `next()` consumes at most one message and does O(message) work, so
 *     no input makes it loop forever.
 *   - Buffers inside returned messages (Bind values, CopyData) alias the
 *     pushed chunks (no copy); callers must not write into them, and pushers
 *     must not reuse a chunk after pushing it.
 */
import { ProtocolViolationError } from './errors.js';

/** Protocol version 3.0 as sent in the StartupMessage. */
export const PROTOCOL_3_0 = 196608;
export const SSL_REQUEST_CODE = 80877103;
export const GSSENC_REQUEST_CODE = 80877104;
export const CANCEL_REQUEST_CODE = 80877102;

/** PostgreSQL's limit for the untagged startup packets (MAX_STARTUP_PACKET_LENGTH). */
export const MAX_STARTUP_PACKET_LENGTH = 10_000;
/** Default cap on one tagged message, length word included (CockroachDB uses 16 MiB too). */
export const DEFAULT_MAX_MESSAGE_SIZE = 16 << 20;

/** 0 = text, 1 = binary. */
export type FormatCode = 0 | 1;

export type StartupPhaseMessage =
  | { readonly kind: 'startup'; readonly protocolVersion: number; readonly params: ReadonlyMap<string, string> }
  | { readonly kind: 'sslRequest' }
  | { readonly kind: 'gssEncRequest' }
  | { readonly kind: 'cancelRequest'; readonly processId: number; readonly secretKey: number };

export type NormalPhaseMessage =
  | { readonly kind: 'query'; readonly sql: string }
  | { readonly kind: 'parse'; readonly name: string; readonly sql: string; readonly paramTypes: readonly number[] }
  | {
      readonly kind: 'bind';
      readonly portal: string;
      readonly statement: string;
      readonly paramFormats: readonly FormatCode[];
      readonly params: readonly (Buffer | null)[];
      readonly resultFormats: readonly FormatCode[];
    }
  | { readonly kind: 'describe'; readonly target: 'S' | 'P'; readonly name: string }
  | { readonly kind: 'execute'; readonly portal: string; readonly maxRows: number }
  | { readonly kind: 'close'; readonly target: 'S' | 'P'; readonly name: string }
  | { readonly kind: 'sync' }
  | { readonly kind: 'flush' }
  | { readonly kind: 'terminate' }
  | { readonly kind: 'password'; readonly data: Buffer }
  | { readonly kind: 'copyData'; readonly data: Buffer }
  | { readonly kind: 'copyDone' }
  | { readonly kind: 'copyFail'; readonly message: string };

export type FrontendMessage = StartupPhaseMessage | NormalPhaseMessage;

export interface FrontendDecoderOptions {
  /** Largest tagged message accepted, length word included. */
  readonly maxMessageSize?: number;
}

/** Bounds-checked reader over one message body; every failure is a 08P01. */
class BodyReader {
  private off: number;
  constructor(
    private readonly buf: Buffer,
    start: number,
    private readonly end: number,
    /** The message's type byte, or its name; only read to word an error. */
    private readonly type: number | string,
  ) {
    this.off = start;
  }

  private get what(): string {
    return typeof this.type === 'string' ? this.type : messageName(this.type);
  }

  private need(n: number): void {
    if (this.end - this.off < n) throw new ProtocolViolationError(`${this.what} message too short`);
  }

  byte(): number {
    this.need(1);
    return this.buf[this.off++]!;
  }

  int16(): number {
    this.need(2);
    const v = this.buf.readInt16BE(this.off);
    this.off += 2;
    return v;
  }

  uint16(): number {
    this.need(2);
    const v = this.buf.readUInt16BE(this.off);
    this.off += 2;
    return v;
  }

  int32(): number {
    this.need(4);
    const v = this.buf.readInt32BE(this.off);
    this.off += 4;
    return v;
  }

  uint32(): number {
    this.need(4);
    const v = this.buf.readUInt32BE(this.off);
    this.off += 4;
    return v;
  }

  cstring(): string {
    const nul = this.buf.indexOf(0, this.off);
    if (nul < 0 || nul >= this.end) throw new ProtocolViolationError(`${this.what} message has an unterminated string`);
    const s = this.buf.toString('utf8', this.off, nul);
    this.off = nul + 1;
    return s;
  }

  bytes(n: number): Buffer {
    this.need(n);
    const b = this.buf.subarray(this.off, this.off + n);
    this.off += n;
    return b;
  }

  rest(): Buffer {
    const b = this.buf.subarray(this.off, this.end);
    this.off = this.end;
    return b;
  }

  atEnd(): boolean {
    return this.off === this.end;
  }

  /** Like PostgreSQL's pq_getmsgend: a message must be consumed exactly. */
  finish(): void {
    if (this.off !== this.end) throw new ProtocolViolationError(`${this.what} message has ${this.end - this.off} trailing bytes`);
  }

  formatCode(): FormatCode {
    const f = this.int16();
    if (f !== 0 && f !== 1) throw new ProtocolViolationError(`${this.what} message has unsupported format code ${f}`);
    return f;
  }
}

export class FrontendDecoder {
  private chunks: Buffer[] = [];
  /** Offset of the first unread byte in chunks[0]. */
  private head = 0;
  private total = 0;
  private phase: 'startup' | 'normal' = 'startup';
  private poisoned: ProtocolViolationError | undefined;
  private readonly maxMessageSize: number;

  constructor(opts: FrontendDecoderOptions = {}) {
    this.maxMessageSize = opts.maxMessageSize ?? DEFAULT_MAX_MESSAGE_SIZE;
  }

  /** Bytes pushed and not yet returned as messages. */
  get bufferedBytes(): number {
    return this.total;
  }

  get inStartupPhase(): boolean {
    return this.phase === 'startup';
  }

  /** Switches to tagged messages; the connection calls it after the StartupMessage. */
  startNormalPhase(): void {
    this.phase = 'normal';
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.total += chunk.length;
  }

  /** The next complete message, or undefined if more bytes are needed. */
  next(): FrontendMessage | undefined {
    if (this.poisoned) throw this.poisoned;
    try {
      return this.phase === 'startup' ? this.nextStartup() : this.nextNormal();
    } catch (e) {
      if (e instanceof ProtocolViolationError) this.poisoned = e;
      throw e;
    }
  }

  /**
   * True when the next buffered message is a complete Sync ('S', length 4).
   * The session peeks with it so an Execute that Sync immediately follows
   * commits with its own statement (one-phase commit) instead of deferring
   * the implicit transaction's commit to the Sync.
   */
  nextIsSync(): boolean {
    if (this.phase !== 'normal' || this.total < 5) return false;
    const b = this.contiguous(5);
    return b[this.head] === 0x53 && b.readInt32BE(this.head + 1) === 4;
  }

  /**
   * Makes the first n buffered bytes contiguous in chunks[0]; requires
   * total ≥ n. Only the chunks covering those n bytes are merged, so a large
   * backlog is not copied again at every message boundary.
   */
  private contiguous(n: number): Buffer {
    const first = this.chunks[0]!;
    let have = first.length - this.head;
    if (have >= n) return first;
    let k = 1;
    while (have < n) have += this.chunks[k++]!.length;
    const merged = Buffer.concat([first.subarray(this.head), ...this.chunks.slice(1, k)], have);
    this.chunks.splice(0, k, merged);
    this.head = 0;
    return merged;
  }

  private consume(n: number): void {
    this.total -= n;
    this.head += n;
    while (this.chunks.length > 0 && this.head >= this.chunks[0]!.length) {
      this.head -= this.chunks[0]!.length;
      this.chunks.shift();
    }
  }

  private nextStartup(): StartupPhaseMessage | undefined {
    if (this.total < 4) return undefined;
    const len = this.contiguous(4).readInt32BE(this.head);
    if (len < 8 || len > MAX_STARTUP_PACKET_LENGTH) throw new ProtocolViolationError(`invalid length of startup packet: ${len}`);
    if (this.total < len) return undefined;
    const buf = this.contiguous(len);
    const start = this.head;
    const r = new BodyReader(buf, start + 4, start + len, 'startup');
    const code = r.int32();
    let msg: StartupPhaseMessage;
    switch (code) {
      case SSL_REQUEST_CODE:
        r.finish();
        msg = { kind: 'sslRequest' };
        break;
      case GSSENC_REQUEST_CODE:
        r.finish();
        msg = { kind: 'gssEncRequest' };
        break;
      case CANCEL_REQUEST_CODE: {
        const processId = r.int32();
        const secretKey = r.int32();
        r.finish();
        msg = { kind: 'cancelRequest', processId, secretKey };
        break;
      }
      default: {
        const params = new Map<string, string>();
        // NB: the body ends with an extra NUL; a missing terminator is invalid layout.
        if (buf[start + len - 1] !== 0) throw new ProtocolViolationError('invalid startup packet layout: expected terminator as last byte');
        for (;;) {
          const name = r.cstring();
          if (name === '') break;
          params.set(name, r.cstring());
        }
        r.finish();
        msg = { kind: 'startup', protocolVersion: code, params };
      }
    }
    this.consume(len);
    return msg;
  }

  private nextNormal(): NormalPhaseMessage | undefined {
    if (this.total < 5) return undefined;
    const hdr = this.contiguous(5);
    const type = hdr[this.head]!;
    const len = hdr.readInt32BE(this.head + 1);
    if (len < 4) throw new ProtocolViolationError(`invalid message length ${len}`);
    if (len + 1 > this.maxMessageSize) {
      throw new ProtocolViolationError(`message of ${len + 1} bytes exceeds the maximum of ${this.maxMessageSize}`);
    }
    if (this.total < len + 1) return undefined;
    const buf = this.contiguous(len + 1);
    const start = this.head + 5;
    const msg = decodeTagged(type, new BodyReader(buf, start, start + len - 4, type));
    this.consume(len + 1);
    return msg;
  }
}

function messageName(type: number): string {
  switch (type) {
    case 0x51: return 'Query';
    case 0x50: return 'Parse';
    case 0x42: return 'Bind';
    case 0x44: return 'Describe';
    case 0x45: return 'Execute';
    case 0x43: return 'Close';
    case 0x53: return 'Sync';
    case 0x48: return 'Flush';
    case 0x58: return 'Terminate';
    case 0x70: return 'Password';
    case 0x64: return 'CopyData';
    case 0x63: return 'CopyDone';
    case 0x66: return 'CopyFail';
    default: return `type 0x${type.toString(16).padStart(2, '0')}`;
  }
}

function describeTarget(r: BodyReader): 'S' | 'P' {
  const t = r.byte();
  if (t === 0x53) return 'S';
  if (t === 0x50) return 'P';
  throw new ProtocolViolationError(`invalid Describe/Close target 0x${t.toString(16)}`);
}

function formatCodes(r: BodyReader): FormatCode[] {
  const n = r.uint16();
  const out: FormatCode[] = new Array(n);
  for (let i = 0; i < n; i++) out[i] = r.formatCode();
  return out;
}

function decodeTagged(type: number, r: BodyReader): NormalPhaseMessage {
  let msg: NormalPhaseMessage;
  switch (type) {
    case 0x51: // 'Q'
      msg = { kind: 'query', sql: r.cstring() };
      break;
    case 0x50: { // 'P'
      const name = r.cstring();
      const sql = r.cstring();
      const n = r.uint16();
      const paramTypes: number[] = new Array(n);
      for (let i = 0; i < n; i++) paramTypes[i] = r.uint32();
      msg = { kind: 'parse', name, sql, paramTypes };
      break;
    }
    case 0x42: { // 'B'
      const portal = r.cstring();
      const statement = r.cstring();
      const paramFormats = formatCodes(r);
      const n = r.uint16();
      const params: (Buffer | null)[] = new Array(n);
      for (let i = 0; i < n; i++) {
        const len = r.int32();
        if (len < -1) throw new ProtocolViolationError(`Bind message has invalid parameter length ${len}`);
        params[i] = len === -1 ? null : r.bytes(len);
      }
      const resultFormats = formatCodes(r);
      msg = { kind: 'bind', portal, statement, paramFormats, params, resultFormats };
      break;
    }
    case 0x44: { // 'D'
      const target = describeTarget(r);
      msg = { kind: 'describe', target, name: r.cstring() };
      break;
    }
    case 0x45: { // 'E'
      const portal = r.cstring();
      const maxRows = r.int32();
      msg = { kind: 'execute', portal, maxRows: maxRows > 0 ? maxRows : 0 };
      break;
    }
    case 0x43: { // 'C'
      const target = describeTarget(r);
      msg = { kind: 'close', target, name: r.cstring() };
      break;
    }
    case 0x53: msg = { kind: 'sync' }; break;
    case 0x48: msg = { kind: 'flush' }; break;
    case 0x58: msg = { kind: 'terminate' }; break;
    case 0x63: msg = { kind: 'copyDone' }; break;
    case 0x70: msg = { kind: 'password', data: r.rest() }; break;
    case 0x64: msg = { kind: 'copyData', data: r.rest() }; break;
    case 0x66: msg = { kind: 'copyFail', message: r.cstring() }; break;
    default:
      throw new ProtocolViolationError(`invalid frontend message type 0x${type.toString(16).padStart(2, '0')}`);
  }
  r.finish();
  return msg;
}

/** The cleartext password of a PasswordMessage body. */
export function parsePasswordMessage(data: Buffer): string {
  const r = new BodyReader(data, 0, data.length, 'PasswordMessage');
  const pw = r.cstring();
  r.finish();
  return pw;
}

/** A SASLInitialResponse body: mechanism name, then int32 length (−1: none) and data. */
export function parseSASLInitialResponse(data: Buffer): { readonly mechanism: string; readonly response: Buffer | null } {
  const r = new BodyReader(data, 0, data.length, 'SASLInitialResponse');
  const mechanism = r.cstring();
  const len = r.int32();
  if (len < -1) throw new ProtocolViolationError(`SASLInitialResponse has invalid length ${len}`);
  const response = len === -1 ? null : r.bytes(len);
  r.finish();
  return { mechanism, response };
}

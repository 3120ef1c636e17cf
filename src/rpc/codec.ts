/**
 * The binary codec every node-to-node message is built from: a growable,
 * reusable BufWriter and a bounds-checked BufReader. The RPC envelope, the
 * handshake and — above this layer — KV requests, Raft messages and responses
 * are all written with these primitives. No JSON anywhere on this path.
 *
 * Primitive layouts (all multi-byte fixed-width integers are big-endian,
 * network order):
 *
 *     u8        [b]                                    1 byte
 *     u16       [hi lo]                                2 bytes
 *     u32       [b3 b2 b1 b0]                          4 bytes
 *     u64       [hi:u32 lo:u32]                        8 bytes (number ≤ 2^53-1, or bigint)
 *     f64       IEEE 754 binary64, big-endian          8 bytes
 *     uvarint   LEB128: 7 bits a byte, low group first, high bit = "more";
 *               numbers 0 … 2^53-1, at most 8 bytes
 *                 300 → ac 02
 *     varint    zig-zag then uvarint: 0→0, -1→1, 1→2, -2→3 …
 *               numbers -(2^52) … 2^52-1 (no bigint on this path)
 *     bool      u8 0 or 1 (anything else is rejected)
 *     bytes     [uvarint len][len raw bytes]
 *     string    [uvarint utf8 byte len][utf8 bytes]
 *     timestamp [uvarint wall µs][uvarint logical]     HLC (src/util/hlc.ts)
 *
 * Invariants:
 *   - range checks on the writing side build their message only once a check
 *     failed (`if (!ok) assert(false, …)`): a template literal passed to
 *     assert() is formatted on every call — every 16-digit wall time of
 *     every timestamp encoded;
 *   - a BufReader never reads outside [start, end): any read past the end, a
 *     varint longer than 8 bytes or above 2^53-1, a non-0/1 bool, all throw
 *     RpcCodecError (code `rpc.codec`) — it never returns garbage;
 *   - BufReader.bytes() returns a view into the source (no copy); the source
 *     buffers given to a reader are never reused by this layer, so views may be
 *     retained (they keep the whole source alive — copy if that matters);
 *   - a BufWriter's finish() view is valid only until its next write or
 *     reset(); copyOut() and swap() return bytes the caller owns (swap()
 *     gives up the writer's buffer instead of copying it).
 *
 * Writer inputs out of range (negative uvarint, non-integer, string too large)
 * are bugs in the caller and fail an assert.
 *
 * Ownership: src/rpc. May import only src/util (DESIGN.md §2).
 */
import { assert } from '../util/assert.js';
import { CairnError } from '../util/errors.js';
import type { Timestamp } from '../util/hlc.js';

/** A message or frame that cannot be decoded: truncated, oversized or malformed. */
export class RpcCodecError extends CairnError {
  override name = 'RpcCodecError';
  constructor(message: string, code = 'rpc.codec') {
    super(code, `rpc: ${message}`, { sqlState: 'XX000' });
  }
}

const TWO_POW_32 = 4294967296;
const MAX_ZIGZAG_MAGNITUDE = 2 ** 52;

export class BufWriter {
  private buf: Buffer;
  private pos = 0;

  constructor(initialCapacity = 4096) {
    this.buf = Buffer.allocUnsafe(Math.max(16, initialCapacity));
  }

  /** Bytes written since the last reset. */
  get length(): number {
    return this.pos;
  }

  /** Forgets the contents and keeps the allocation for reuse. */
  reset(): void {
    this.pos = 0;
  }

  private ensure(n: number): void {
    const need = this.pos + n;
    if (need <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < need) cap *= 2;
    const next = Buffer.allocUnsafe(cap);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  u8(v: number): void {
    this.ensure(1);
    this.buf[this.pos++] = v & 0xff;
  }

  bool(v: boolean): void {
    this.u8(v ? 1 : 0);
  }

  u16(v: number): void {
    if (!(v >= 0 && v <= 0xffff && Number.isInteger(v))) assert(false, `rpc: u16 out of range: ${v}`);
    this.ensure(2);
    this.buf[this.pos++] = v >>> 8;
    this.buf[this.pos++] = v & 0xff;
  }

  u32(v: number): void {
    this.ensure(4);
    this.buf.writeUInt32BE(v, this.pos);
    this.pos += 4;
  }

  /** A u64 from a safe non-negative integer; see u64Big for the full range. */
  u64(v: number): void {
    if (!(v >= 0 && Number.isSafeInteger(v))) assert(false, `rpc: u64 out of range: ${v}`);
    this.ensure(8);
    this.buf.writeUInt32BE(Math.floor(v / TWO_POW_32), this.pos);
    this.buf.writeUInt32BE(v >>> 0, this.pos + 4);
    this.pos += 8;
  }

  u64Big(v: bigint): void {
    this.ensure(8);
    this.buf.writeBigUInt64BE(v, this.pos);
    this.pos += 8;
  }

  f64(v: number): void {
    this.ensure(8);
    this.buf.writeDoubleBE(v, this.pos);
    this.pos += 8;
  }

  uvarint(v: number): void {
    if (v >= 0 && v < 0x80 && (v | 0) === v) {
      this.ensure(1);
      this.buf[this.pos++] = v;
      return;
    }
    if (!(v >= 0 && Number.isSafeInteger(v))) assert(false, `rpc: uvarint out of range: ${v}`);
    this.ensure(8);
    const buf = this.buf;
    let pos = this.pos;
    if (v >= 0x10000000) {
      // Above 28 bits: emit the low four groups from the low word, then carry
      // the rest (≤ 25 bits) in int32 arithmetic — no float division per byte.
      const lo = v >>> 0;
      buf[pos++] = (lo & 0x7f) | 0x80;
      buf[pos++] = ((lo >>> 7) & 0x7f) | 0x80;
      buf[pos++] = ((lo >>> 14) & 0x7f) | 0x80;
      buf[pos++] = ((lo >>> 21) & 0x7f) | 0x80;
      v = (lo >>> 28) | (Math.floor(v / TWO_POW_32) << 4);
    }
    while (v >= 0x80) {
      buf[pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[pos++] = v;
    this.pos = pos;
  }

  /** Zig-zag signed varint for integers of magnitude below 2^52. */
  varint(v: number): void {
    if (!(Number.isInteger(v) && v < MAX_ZIGZAG_MAGNITUDE && v >= -MAX_ZIGZAG_MAGNITUDE)) assert(false, `rpc: varint out of range: ${v}`);
    this.uvarint(v >= 0 ? v * 2 : -v * 2 - 1);
  }

  /** Length-prefixed bytes. */
  bytes(b: Uint8Array): void {
    this.uvarint(b.length);
    this.raw(b);
  }

  /** Bytes without a length prefix. */
  raw(b: Uint8Array): void {
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  string(s: string): void {
    // Measuring first keeps the prefix a compact varint (no back-patching).
    const len = Buffer.byteLength(s, 'utf8');
    this.uvarint(len);
    this.ensure(len);
    this.pos += this.buf.write(s, this.pos, len, 'utf8');
  }

  timestamp(t: Timestamp): void {
    this.uvarint(t.wall);
    this.uvarint(t.logical);
  }

  /** Reserves n bytes to be filled later (patchU32); returns their offset. */
  reserve(n: number): number {
    this.ensure(n);
    const at = this.pos;
    this.pos += n;
    return at;
  }

  patchU32(at: number, v: number): void {
    assert(at >= 0 && at + 4 <= this.pos, 'rpc: patch outside the written bytes');
    this.buf.writeUInt32BE(v, at);
  }

  /** A view of the bytes written; valid until the next write or reset. */
  finish(): Buffer {
    return this.buf.subarray(0, this.pos);
  }

  /** Current capacity of the underlying buffer. */
  get capacity(): number {
    return this.buf.length;
  }

  /**
   * Hands the bytes written over to the caller without copying them and
   * continues, reset, in `next` (a buffer the caller no longer uses, e.g. one
   * whose socket write completed). The returned view stays valid: the writer
   * never touches that buffer again.
   */
  swap(next: Buffer): Buffer {
    const out = this.buf.subarray(0, this.pos);
    this.buf = next;
    this.pos = 0;
    return out;
  }

  /** An owned copy of the bytes written. */
  copyOut(): Buffer {
    const out = Buffer.allocUnsafe(this.pos);
    this.buf.copy(out, 0, 0, this.pos);
    return out;
  }
}

function asBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

export class BufReader {
  private readonly buf: Buffer;
  private pos: number;
  private readonly end: number;

  constructor(src: Uint8Array, start = 0, end = src.length) {
    assert(start >= 0 && start <= end && end <= src.length, 'rpc: reader bounds outside the source');
    this.buf = asBuffer(src);
    this.pos = start;
    this.end = end;
  }

  get offset(): number {
    return this.pos;
  }

  get remaining(): number {
    return this.end - this.pos;
  }

  private need(n: number, what: string): void {
    if (this.end - this.pos < n) {
      throw new RpcCodecError(`truncated ${what}: need ${n} bytes at offset ${this.pos}, have ${this.end - this.pos}`);
    }
  }

  u8(): number {
    this.need(1, 'u8');
    return this.buf[this.pos++] as number;
  }

  bool(): boolean {
    const b = this.u8();
    if (b > 1) throw new RpcCodecError(`bool byte ${b} at offset ${this.pos - 1} is neither 0 nor 1`);
    return b === 1;
  }

  u16(): number {
    this.need(2, 'u16');
    const v = this.buf.readUInt16BE(this.pos);
    this.pos += 2;
    return v;
  }

  u32(): number {
    this.need(4, 'u32');
    const v = this.buf.readUInt32BE(this.pos);
    this.pos += 4;
    return v;
  }

  /** A u64 that must fit a safe integer; see u64Big for the full range. */
  u64(): number {
    this.need(8, 'u64');
    const hi = this.buf.readUInt32BE(this.pos);
    if (hi >= 0x200000) throw new RpcCodecError(`u64 at offset ${this.pos} exceeds 2^53-1`);
    const lo = this.buf.readUInt32BE(this.pos + 4);
    this.pos += 8;
    return hi * TWO_POW_32 + lo;
  }

  u64Big(): bigint {
    this.need(8, 'u64');
    const v = this.buf.readBigUInt64BE(this.pos);
    this.pos += 8;
    return v;
  }

  f64(): number {
    this.need(8, 'f64');
    const v = this.buf.readDoubleBE(this.pos);
    this.pos += 8;
    return v;
  }

  uvarint(): number {
    const buf = this.buf;
    let pos = this.pos;
    if (pos < this.end) {
      const first = buf[pos] as number;
      if (first < 0x80) {
        this.pos = pos + 1;
        return first;
      }
    }
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 8; i++) {
      if (pos >= this.end) throw new RpcCodecError(`truncated uvarint at offset ${this.pos}`);
      const b = buf[pos++] as number;
      result += (b & 0x7f) * mul;
      if (b < 0x80) {
        if (result > Number.MAX_SAFE_INTEGER) throw new RpcCodecError(`uvarint at offset ${this.pos} exceeds 2^53-1`);
        this.pos = pos;
        return result;
      }
      mul *= 128;
    }
    throw new RpcCodecError(`uvarint at offset ${this.pos} is longer than 8 bytes`);
  }

  varint(): number {
    const u = this.uvarint();
    return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
  }

  /** Length-prefixed bytes, as a view into the source (no copy). */
  bytes(): Buffer {
    const len = this.uvarint();
    return this.raw(len);
  }

  /** n bytes without a length prefix, as a view into the source. */
  raw(n: number): Buffer {
    this.need(n, 'bytes');
    const v = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return v;
  }

  string(): string {
    const len = this.uvarint();
    this.need(len, 'string');
    const s = this.buf.toString('utf8', this.pos, this.pos + len);
    this.pos += len;
    return s;
  }

  timestamp(): Timestamp {
    const wall = this.uvarint();
    const logical = this.uvarint();
    if (logical > 0xffffffff) throw new RpcCodecError(`timestamp logical ${logical} exceeds u32`);
    return { wall, logical };
  }

  /** Throws unless every byte was consumed (trailing garbage is malformed). */
  expectEnd(what = 'message'): void {
    if (this.pos !== this.end) {
      throw new RpcCodecError(`${this.end - this.pos} trailing bytes after ${what}`);
    }
  }
}

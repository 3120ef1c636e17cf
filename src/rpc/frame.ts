/**
 * Framing of the RPC byte stream. A TCP connection carries a sequence of
 * frames; a frame is a big-endian u32 body length followed by the body:
 *
 *     +--------+--------+--------+--------+=====================+
 *     |        body length (u32 BE)       |  body (length bytes) |
 *     +--------+--------+--------+--------+=====================+
 *
 * The first frame each side sends is a handshake (handshake.ts); every later
 * body holds one or more message envelopes back to back (envelope.ts) — the
 * writer coalesces all messages queued in one event-loop turn into one frame.
 *
 * FrameDecoder is incremental: it accepts the stream cut into chunks at any
 * offsets and emits each complete body exactly once, in order. A body wholly
 * inside one chunk is emitted as a view of that chunk (no copy) — unless the
 * caller reuses its chunk buffers (copyBodies: the dialer's socket reads into
 * one reused buffer), then it is copied out; a body that spans chunks is
 * assembled into one fresh buffer of exactly its size (one copy). A length above the configured maximum throws RpcCodecError
 * (`rpc.frame_too_large`) before anything is allocated; after any throw the
 * decoder is poisoned and the connection must be closed.
 *
 * Ownership: src/rpc.
 */
import { assert } from '../util/assert.js';
import { RpcCodecError } from './codec.js';
import type { BufWriter } from './codec.js';

export const FRAME_HEADER_BYTES = 4;
export const DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024;

/** Starts a frame in w: reserves the length; returns the token for endFrame. */
export function beginFrame(w: BufWriter): number {
  return w.reserve(FRAME_HEADER_BYTES);
}

/** Ends the frame started at `at`, writing its body length. */
export function endFrame(w: BufWriter, at: number): void {
  w.patchU32(at, w.length - at - FRAME_HEADER_BYTES);
}

/** One whole frame around a body (tests and the handshake). */
export function encodeFrame(body: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + body.length);
  out.writeUInt32BE(body.length, 0);
  out.set(body, FRAME_HEADER_BYTES);
  return out;
}

export class FrameDecoder {
  private readonly header = Buffer.alloc(FRAME_HEADER_BYTES);
  private headerFilled = 0;
  private body: Buffer | null = null;
  private bodyFilled = 0;
  private poisoned = false;

  /**
   * @param copyBodies the chunks given to push() are reused by the caller (a
   *   socket reading into one buffer): every body is copied out, none is a view.
   */
  constructor(
    private maxFrameBytes: number = DEFAULT_MAX_FRAME_BYTES,
    private readonly copyBodies = false,
  ) {
    assert(maxFrameBytes > 0 && maxFrameBytes <= 0xffffffff, 'rpc: max frame size out of range');
  }

  /** Changes the limit for frames whose header has not been read yet. */
  setMaxFrameBytes(n: number): void {
    assert(n > 0 && n <= 0xffffffff, 'rpc: max frame size out of range');
    this.maxFrameBytes = n;
  }

  /** True between frames (no partial header or body buffered). */
  get idle(): boolean {
    return this.headerFilled === 0 && this.body === null;
  }

  /** Feeds one chunk; calls onFrame for each body completed by it. */
  push(chunk: Buffer, onFrame: (body: Buffer) => void): void {
    assert(!this.poisoned, 'rpc: frame decoder used after an error');
    try {
      this.pushInner(chunk, onFrame);
    } catch (e) {
      this.poisoned = true;
      throw e;
    }
  }

  private checkLength(len: number): void {
    if (len > this.maxFrameBytes) {
      throw new RpcCodecError(`frame of ${len} bytes exceeds the maximum of ${this.maxFrameBytes}`, 'rpc.frame_too_large');
    }
  }

  private pushInner(chunk: Buffer, onFrame: (body: Buffer) => void): void {
    const n = chunk.length;
    let off = 0;
    while (off < n) {
      const body = this.body;
      if (body !== null) {
        const take = Math.min(body.length - this.bodyFilled, n - off);
        chunk.copy(body, this.bodyFilled, off, off + take);
        this.bodyFilled += take;
        off += take;
        if (this.bodyFilled === body.length) {
          this.body = null;
          onFrame(body);
        }
        continue;
      }
      let len: number;
      if (this.headerFilled === 0 && n - off >= FRAME_HEADER_BYTES) {
        len = chunk.readUInt32BE(off);
        off += FRAME_HEADER_BYTES;
        this.checkLength(len);
        if (n - off >= len) {
          // Fast path: the whole body is in this chunk.
          let whole = chunk.subarray(off, off + len);
          if (this.copyBodies) whole = Buffer.from(whole);
          off += len;
          onFrame(whole);
          continue;
        }
      } else {
        const take = Math.min(FRAME_HEADER_BYTES - this.headerFilled, n - off);
        chunk.copy(this.header, this.headerFilled, off, off + take);
        this.headerFilled += take;
        off += take;
        if (this.headerFilled < FRAME_HEADER_BYTES) continue;
        this.headerFilled = 0;
        len = this.header.readUInt32BE(0);
        this.checkLength(len);
      }
      if (len === 0) {
        onFrame(Buffer.alloc(0));
        continue;
      }
      this.body = Buffer.allocUnsafe(len);
      this.bodyFilled = 0;
    }
  }
}

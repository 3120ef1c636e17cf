/**
 * The message envelope: what every RPC message looks like inside a frame body
 * (frame.ts). A body is one or more envelopes back to back, nothing between.
 *
 *     +------+-----------+================+===========+==============+=================+
 *     | kind | method id | request id     | HLC wall  | HLC logical  | payload         |
 *     | u8   | u16 BE    | uvarint        | uvarint µs| uvarint      | uvarint len+raw |
 *     +------+-----------+================+===========+==============+=================+
 *
 *   kind        0 request, 1 response, 2 one-way, 3 error response
 *   method id   registered by the layer above (KV, Raft transport); echoed in
 *               responses so the receiver can attribute them
 *   request id  per-connection, chosen by the caller, echoed by the response;
 *               0 for one-way messages
 *   HLC         the sender's clock (src/util/hlc.ts); the receiver folds it
 *               into its own clock before acting on the message
 *   payload     opaque bytes of the layer above — except for kind 3, where the
 *               payload is an encoded error:
 *
 *     +===========+===========+-------+===========+
 *     | code      | message   | flags | sqlState  |
 *     | string    | string    | u8    | string    |
 *     +===========+===========+-------+===========+
 *       flags: bit 0 retryable, bit 1 ambiguous (never both; other bits 0)
 *
 * A decoded envelope's payload is a view into the frame body (no copy).
 * Decoding rejects unknown kinds, a one-way with a request id, truncation, and
 * error payloads with bad flags — all as RpcCodecError.
 *
 * Ownership: src/rpc.
 */
import { CairnError } from '../util/errors.js';
import type { Timestamp } from '../util/hlc.js';
import { type BufReader, BufWriter, RpcCodecError } from './codec.js';

export const MessageKind = {
  Request: 0,
  Response: 1,
  OneWay: 2,
  Error: 3,
} as const;
export type MessageKind = (typeof MessageKind)[keyof typeof MessageKind];

export interface Envelope {
  readonly kind: MessageKind;
  readonly method: number;
  readonly requestId: number;
  readonly ts: Timestamp;
  readonly payload: Buffer;
}

/** Fixed bytes before the variable fields: kind + method. */
const ENVELOPE_FIXED_BYTES = 3;
/** Upper bound on an envelope's size without its payload bytes. */
export const ENVELOPE_MAX_OVERHEAD = ENVELOPE_FIXED_BYTES + 8 + 8 + 5 + 8;

export function encodeEnvelope(
  w: BufWriter,
  kind: MessageKind,
  method: number,
  requestId: number,
  ts: Timestamp,
  payload: Uint8Array,
): void {
  w.u8(kind);
  w.u16(method);
  w.uvarint(requestId);
  w.timestamp(ts);
  w.bytes(payload);
}

/**
 * Decodes one envelope. When its timestamp equals `prevTs` (the messages of
 * one frame share the sender's timestamp) that object is reused.
 */
export function decodeEnvelope(r: BufReader, prevTs?: Timestamp): Envelope {
  const kind = r.u8();
  if (kind > MessageKind.Error) throw new RpcCodecError(`unknown message kind ${kind}`);
  const method = r.u16();
  const requestId = r.uvarint();
  if (kind === MessageKind.OneWay && requestId !== 0) {
    throw new RpcCodecError(`one-way message carries request id ${requestId}`);
  }
  const wall = r.uvarint();
  const logical = r.uvarint();
  if (logical > 0xffffffff) throw new RpcCodecError(`timestamp logical ${logical} exceeds u32`);
  const ts = prevTs !== undefined && prevTs.wall === wall && prevTs.logical === logical ? prevTs : { wall, logical };
  const payload = r.bytes();
  return { kind: kind as MessageKind, method, requestId, ts, payload };
}

const FLAG_RETRYABLE = 1;
const FLAG_AMBIGUOUS = 2;

/** The payload of an error response carrying err. */
export function encodeErrorPayload(err: CairnError): Buffer {
  const w = new BufWriter(64 + err.message.length);
  w.string(err.code);
  w.string(err.message);
  w.u8((err.retryable ? FLAG_RETRYABLE : 0) | (err.ambiguous ? FLAG_AMBIGUOUS : 0));
  w.string(err.sqlState);
  return w.copyOut();
}

/** Rebuilds the CairnError an error response carries, on the caller's side. */
export function decodeErrorPayload(r: BufReader): CairnError {
  const code = r.string();
  const message = r.string();
  const flags = r.u8();
  if (flags > 3 || flags === (FLAG_RETRYABLE | FLAG_AMBIGUOUS)) {
    throw new RpcCodecError(`error response flags ${flags} are invalid`);
  }
  const sqlState = r.string();
  r.expectEnd('error payload');
  return new CairnError(code, message, {
    retryable: (flags & FLAG_RETRYABLE) !== 0,
    ambiguous: (flags & FLAG_AMBIGUOUS) !== 0,
    sqlState,
  });
}

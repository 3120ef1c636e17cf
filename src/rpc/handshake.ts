/**
 * The connection handshake: the first frame in each direction (frame.ts).
 * The dialer sends a hello; the acceptor answers with an ack, or a reject and
 * closes. No message envelope flows before the dialer has the ack.
 *
 *     +----------------+--------------+------+=========...
 *     | magic "CRN1"   | version      | type | fields by type
 *     | u32 0x43524e31 | u16          | u8   |
 *     +----------------+--------------+------+=========...
 *
 *     type 0 hello   string clusterId ('' = joining, not known yet)
 *                    uvarint fromNodeId (0 = not allocated yet)
 *                    uvarint toNodeId   (0 = whoever answers, e.g. a join address)
 *                    timestamp ts       (dialer's HLC)
 *     type 1 ack     string clusterId, uvarint nodeId, timestamp ts
 *     type 2 reject  string code, string message
 *
 * Checks (both ends): an unknown cluster id on either side accepts (a joining
 * node learns the id from the ack: Connection.remoteClusterId); two known ids
 * must be equal (`rpc.cluster_id_mismatch`). A dialer naming its target node
 * id must reach that node (`rpc.node_id_mismatch`). Version or magic mismatch:
 * `rpc.version_mismatch`. The ts of either side updates the other's clock;
 * an offset beyond the bound rejects the connection (`hlc.clock_offset`).
 *
 * Ownership: src/rpc.
 */
import type { Timestamp } from '../util/hlc.js';
import { type BufReader, BufWriter, RpcCodecError } from './codec.js';
import { RpcError } from './errors.js';

export const HANDSHAKE_MAGIC = 0x43524e31;
export const PROTOCOL_VERSION = 1;

export type Handshake =
  | { readonly type: 'hello'; readonly clusterId: string; readonly fromNodeId: number; readonly toNodeId: number; readonly ts: Timestamp }
  | { readonly type: 'ack'; readonly clusterId: string; readonly nodeId: number; readonly ts: Timestamp }
  | { readonly type: 'reject'; readonly code: string; readonly message: string };

const TYPE_HELLO = 0;
const TYPE_ACK = 1;
const TYPE_REJECT = 2;

/** The handshake's frame body. */
export function encodeHandshake(h: Handshake, version = PROTOCOL_VERSION): Buffer {
  const w = new BufWriter(64);
  w.u32(HANDSHAKE_MAGIC);
  w.u16(version);
  switch (h.type) {
    case 'hello':
      w.u8(TYPE_HELLO);
      w.string(h.clusterId);
      w.uvarint(h.fromNodeId);
      w.uvarint(h.toNodeId);
      w.timestamp(h.ts);
      break;
    case 'ack':
      w.u8(TYPE_ACK);
      w.string(h.clusterId);
      w.uvarint(h.nodeId);
      w.timestamp(h.ts);
      break;
    case 'reject':
      w.u8(TYPE_REJECT);
      w.string(h.code);
      w.string(h.message);
      break;
  }
  return w.copyOut();
}

/**
 * Decodes a handshake body. Bytes that are not a handshake at all throw
 * RpcCodecError; a well-formed handshake of another version throws
 * RpcError `rpc.version_mismatch`.
 */
export function decodeHandshake(r: BufReader): Handshake {
  const magic = r.u32();
  if (magic !== HANDSHAKE_MAGIC) throw new RpcCodecError(`bad handshake magic 0x${magic.toString(16)}`);
  const version = r.u16();
  if (version !== PROTOCOL_VERSION) {
    throw new RpcError('rpc.version_mismatch', `rpc: peer speaks protocol version ${version}, this node ${PROTOCOL_VERSION}`);
  }
  const type = r.u8();
  let h: Handshake;
  switch (type) {
    case TYPE_HELLO:
      h = { type: 'hello', clusterId: r.string(), fromNodeId: r.uvarint(), toNodeId: r.uvarint(), ts: r.timestamp() };
      break;
    case TYPE_ACK:
      h = { type: 'ack', clusterId: r.string(), nodeId: r.uvarint(), ts: r.timestamp() };
      break;
    case TYPE_REJECT:
      h = { type: 'reject', code: r.string(), message: r.string() };
      break;
    default:
      throw new RpcCodecError(`unknown handshake type ${type}`);
  }
  r.expectEnd('handshake');
  return h;
}

/** True when two cluster ids disagree; an unknown ('') id agrees with any. */
export function clusterIdConflict(local: string, remote: string): boolean {
  return local !== '' && remote !== '' && local !== remote;
}

/**
 * The byte encoding of a ConfChangeV2 inside an EntryConfChange entry's data,
 * and the compact text form used by transcripts ("v2 l3 r1 u4").
 *
 * Layout (all integers big-endian):
 *
 *   0        1        3                      3+5n
 *   +--------+--------+----------------------+------------------+
 *   | trans. | n: u16 | n × (type u8, id u32) | context bytes …  |
 *   +--------+--------+----------------------+------------------+
 *
 *   trans. = ConfChangeTransition (0 auto, 1 joint implicit, 2 joint explicit)
 *   type   = ConfChangeType (0 AddNode, 1 RemoveNode, 2 UpdateNode, 3 AddLearnerNode)
 *
 * Invariant: decode(encode(cc)) equals cc; replica ids fit in u32.
 */
import { assert } from '../src/util/assert.js';
import { CorruptionError } from '../src/util/errors.js';
import { ConfChangeTransition, ConfChangeType, type ConfChangeSingle, type ConfChangeV2 } from './types.js';

const HEADER = 3;
const ITEM = 5;

export function encodeConfChange(cc: ConfChangeV2): Uint8Array {
  const n = cc.changes.length;
  assert(n <= 0xffff, 'raft: too many changes in one conf change');
  const buf = Buffer.allocUnsafe(HEADER + ITEM * n + cc.context.length);
  buf[0] = cc.transition;
  buf.writeUInt16BE(n, 1);
  let off = HEADER;
  for (const c of cc.changes) {
    assert(Number.isInteger(c.nodeId) && c.nodeId >= 0 && c.nodeId <= 0xffffffff, 'raft: replica id out of range');
    buf[off] = c.type;
    buf.writeUInt32BE(c.nodeId, off + 1);
    off += ITEM;
  }
  buf.set(cc.context, off);
  return buf;
}

export function decodeConfChange(data: Uint8Array): ConfChangeV2 {
  if (data.length < HEADER) throw new CorruptionError('raft: conf change too short');
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const transition = buf[0] as number;
  if (transition > ConfChangeTransition.JointExplicit) throw new CorruptionError(`raft: bad conf change transition ${transition}`);
  const n = buf.readUInt16BE(1);
  if (data.length < HEADER + ITEM * n) throw new CorruptionError('raft: conf change truncated');
  const changes: ConfChangeSingle[] = [];
  let off = HEADER;
  for (let i = 0; i < n; i++) {
    const type = buf[off] as number;
    if (type > ConfChangeType.AddLearnerNode) throw new CorruptionError(`raft: bad conf change type ${type}`);
    changes.push({ type, nodeId: buf.readUInt32BE(off + 1) });
    off += ITEM;
  }
  return { transition, changes, context: data.subarray(off) };
}

const LETTERS: Record<string, ConfChangeType> = {
  v: ConfChangeType.AddNode,
  l: ConfChangeType.AddLearnerNode,
  r: ConfChangeType.RemoveNode,
  u: ConfChangeType.UpdateNode,
};

/** Parses "v1 l2 r3 u4" (add voter, add learner, remove, update). */
export function confChangesFromString(s: string): ConfChangeSingle[] {
  const out: ConfChangeSingle[] = [];
  for (const tok of s.trim().split(/\s+/)) {
    if (tok === '') continue;
    const type = LETTERS[tok[0] as string];
    const id = Number(tok.slice(1));
    if (type === undefined || !Number.isInteger(id) || id <= 0) throw new Error(`raft: bad conf change token ${tok}`);
    out.push({ type, nodeId: id });
  }
  return out;
}

export function confChangesToString(ccs: readonly ConfChangeSingle[]): string {
  const letter = ['v', 'r', 'u', 'l'];
  return ccs.map((c) => `${letter[c.type]}${c.nodeId}`).join(' ');
}

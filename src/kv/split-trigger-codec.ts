/**
 * The encoding of a descriptor-changing trigger (split-trigger.ts applies it):
 * a Buffer inside the Raft command's replicated side effects.
 *
 *   +------+-----------------------------+-----------------------------+
 *   | kind | left descriptor (api-codec) | right descriptor (api-codec)|
 *   |  u8  |                             |                             |
 *   +------+-----------------------------+-----------------------------+
 *   kind 1 = split
 *
 * Kept apart from split-trigger.ts so that batcheval (imported by replica.ts)
 * does not import the Replica class.
 */
import { assert } from '../util/assert.js';
import { BufReader, BufWriter } from '../rpc/codec.js';
import type { RangeDescriptor } from './api.js';
import { readDescriptor, writeDescriptor } from './api-codec.js';

export interface SplitTrigger {
  readonly kind: 'split';
  readonly left: RangeDescriptor;
  readonly right: RangeDescriptor;
}

export type RangeTrigger = SplitTrigger;

const KIND_SPLIT = 1;

export function encodeRangeTrigger(t: RangeTrigger): Buffer {
  const w = new BufWriter(256);
  w.u8(KIND_SPLIT);
  writeDescriptor(w, t.left);
  writeDescriptor(w, t.right);
  return w.finish();
}

export function decodeRangeTrigger(b: Uint8Array): RangeTrigger {
  const r = new BufReader(b);
  const kind = r.u8();
  assert(kind === KIND_SPLIT, `kv: unknown range trigger kind ${kind}`);
  const left = readDescriptor(r);
  const right = readDescriptor(r);
  r.expectEnd('range trigger');
  return { kind: 'split', left, right };
}


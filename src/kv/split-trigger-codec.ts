/**
 * The encoding of a descriptor-changing trigger (split-trigger.ts applies it):
 * a Buffer inside the Raft command's replicated side effects.
 *
 *   +------+-----------------------------+-----------------------------+
 *   | kind | left descriptor (api-codec) | right descriptor (api-codec)|
 *   |  u8  |                             |                             |
 *   +------+-----------------------------+-----------------------------+
 *   kind 1 = split: left = the left half, right = the new right half
 *   kind 2 = merge: left = the merged range, right = the absorbed range (as frozen)
 *   kind 3 = freeze (Subsume): left = right = the range being frozen
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

export interface MergeTrigger {
  readonly kind: 'merge';
  /** The merged descriptor (the left range's id, both spans). */
  readonly left: RangeDescriptor;
  /** The absorbed right-hand range, as Subsume froze it. */
  readonly right: RangeDescriptor;
}

/** Subsume's: install the frozen lease the command wrote (cmd-subsume.ts). */
export interface FreezeTrigger {
  readonly kind: 'freeze';
  readonly left: RangeDescriptor;
  readonly right: RangeDescriptor;
}

export type RangeTrigger = SplitTrigger | MergeTrigger | FreezeTrigger;

const KIND_SPLIT = 1;
const KIND_MERGE = 2;
const KIND_FREEZE = 3;
const KINDS = ['', 'split', 'merge', 'freeze'] as const;

export function encodeRangeTrigger(t: RangeTrigger): Buffer {
  const w = new BufWriter(256);
  w.u8(t.kind === 'split' ? KIND_SPLIT : t.kind === 'merge' ? KIND_MERGE : KIND_FREEZE);
  writeDescriptor(w, t.left);
  writeDescriptor(w, t.right);
  return w.finish();
}

export function decodeRangeTrigger(b: Uint8Array): RangeTrigger {
  const r = new BufReader(b);
  const kind = r.u8();
  assert(kind >= KIND_SPLIT && kind <= KIND_FREEZE, `kv: unknown range trigger kind ${kind}`);
  const left = readDescriptor(r);
  const right = readDescriptor(r);
  r.expectEnd('range trigger');
  return { kind: KINDS[kind] as RangeTrigger['kind'], left, right } as RangeTrigger;
}


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
 *   kind 4 = change (AdminChangeReplicas): left = the new descriptor, right = the old
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

/** AdminChangeReplicas': install `left` and the Raft config change from `right` to it (replica-change.ts). */
export interface ChangeTrigger {
  readonly kind: 'change';
  readonly left: RangeDescriptor;
  readonly right: RangeDescriptor;
}

export type RangeTrigger = SplitTrigger | MergeTrigger | FreezeTrigger | ChangeTrigger;

const KIND_SPLIT = 1;
const KIND_CHANGE = 4;
const KINDS = ['', 'split', 'merge', 'freeze', 'change'] as const;

export function encodeRangeTrigger(t: RangeTrigger): Buffer {
  const w = new BufWriter(256);
  w.u8(KINDS.indexOf(t.kind));
  writeDescriptor(w, t.left);
  writeDescriptor(w, t.right);
  return w.finish();
}

export function decodeRangeTrigger(b: Uint8Array): RangeTrigger {
  const r = new BufReader(b);
  const kind = r.u8();
  assert(kind >= KIND_SPLIT && kind <= KIND_CHANGE, `kv: unknown range trigger kind ${kind}`);
  const left = readDescriptor(r);
  const right = readDescriptor(r);
  r.expectEnd('range trigger');
  return { kind: KINDS[kind] as RangeTrigger['kind'], left, right } as RangeTrigger;
}


/**
 * Range tombstones (CockroachDB's RangeTombstone): when a store's replica of
 * a range is removed (replication change, replica GC, merged away), the same
 * engine batch that clears its range-ID state writes a tombstone holding the
 * next replica id this store may ever host for that range. Raft messages for
 * a range with no replica here and a `toReplicaId` below the tombstone are
 * stale (from a leader that has not yet learned the removal, or a peer that
 * has not applied the merge): they are dropped and never re-create the
 * replica — an empty re-created replica would be told to commit entries it
 * does not have, which raft treats as a broken invariant.
 *
 * Invariants: a tombstone only grows (writeRangeTombstone keeps the max); a
 * merged-away right-hand range gets MERGED_TOMBSTONE (no replica id passes).
 * Ownership: written by replica-change.ts (clearReplicaData) and
 * merge-trigger.ts; read by the Store's incoming Raft message path.
 *
 * Value layout (unreplicated range-ID-local key "rftb", storage/keys.ts):
 *
 *     +--------------------------+
 *     | nextReplicaId: u32 BE    |
 *     +--------------------------+
 */
import type { WriteBatch } from '../../storage/engine.js';
import { encodeMvccKey } from '../../storage/mvcc-key.js';
import { rangeTombstoneKey } from '../../storage/keys.js';

/** The tombstone of a range merged away: no replica id may ever be created again. */
export const MERGED_TOMBSTONE = 0xffffffff;

interface SyncReader {
  getSync(key: Buffer): Buffer | undefined;
}

/** The next replica id allowed for rangeId on this engine (0: no tombstone). */
export function readRangeTombstone(r: SyncReader, rangeId: number): number {
  const raw = r.getSync(encodeMvccKey(rangeTombstoneKey(rangeId)));
  return raw === undefined || raw.length < 4 ? 0 : raw.readUInt32BE(0);
}

/**
 * Stages a tombstone of at least `nextReplicaId` into `b` (never lowers an
 * existing one, read from `r`: the engine or the batch itself).
 */
export function writeRangeTombstone(r: SyncReader, b: WriteBatch, rangeId: number, nextReplicaId: number): void {
  const v = Math.max(readRangeTombstone(r, rangeId), Math.min(nextReplicaId, MERGED_TOMBSTONE));
  const buf = Buffer.allocUnsafe(4);
  buf.writeUInt32BE(v, 0);
  b.put(encodeMvccKey(rangeTombstoneKey(rangeId)), buf);
}

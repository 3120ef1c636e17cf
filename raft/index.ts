/**
 * The Raft library's public surface (DESIGN.md §3 "Raft"): what src/kv, the
 * fault simulation and the benchmarks import. Internals (raft.ts, log.ts,
 * tracker/, quorum/, confchange/) stay importable for tests, but callers
 * should need only this.
 */
export { RawNode, splitAppendForDurability, type BasicStatus, type ProgressStatus, type Status } from './raw-node.js';
export { MemoryStorage } from './storage.js';
export { encodeConfChange, decodeConfChange, confChangesFromString, confChangesToString } from './conf-change-codec.js';
export { InvalidConfChangeError } from './confchange/confchange.js';
export {
  describeEntry,
  describeMessage,
  describeReady,
  describeHardState,
  describeSoftState,
  describeSnapshot,
  describeConfState,
  defaultEntryFormatter,
  type EntryFormatter,
} from './describe.js';
export * from './types.js';

/**
 * The KV server core's public surface (what src/server, the DistSender and
 * the transaction, split and replication code build on):
 *
 *   api.ts          requests/responses/batches, descriptors, leases, KV errors, RPC method ids
 *   api-codec.ts    their binary encoding (+ Raft messages, commands, snapshots, state records)
 *   batcheval/      one Command per request kind; registerCommand for new kinds
 *   store.ts        Store: replicas, the group-committed Raft loop, ticks, RPC handlers
 *   replica.ts      Replica: lease-checked evaluation, proposals, deterministic apply
 *   replica-lease.ts lease rules (pure)
 *   raft-storage.ts the Raft log/hard state in the engine with an in-memory tail
 *   bootstrap.ts    bootstrapCluster, writeStoreIdent, writeRangeDescriptor (+meta2), loadRangeDescriptors
 *   kv-client.ts    Sender, NodeDialer/RpcNodeDialer, LeaseholderRouter, KvClient
 *   settings.ts     KvSettings (Raft timing, leases, truncation), defaults and test values
 */
export * from './api.js';
export * from './api-codec.js';
export * from './batcheval/index.js';
export { Store, type StoreOptions, type StoreMetrics } from './store.js';
export { Replica, confStateOf, type StoreContext } from './replica.js';
export * from './replica-lease.js';
export { ReplicaRaftStorage, raftLogEngineKey, writeInitialRaftState } from './raft-storage.js';
export * from './bootstrap.js';
export * from './kv-client.js';
export * from './settings.js';
export { computeRangeChecksum, replicatedEngineSpans } from './replica-consistency.js';

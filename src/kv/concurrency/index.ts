/**
 * Per-range concurrency control (CockroachDB's kv/kvserver/concurrency,
 * spanlatch, tscache and txnwait), used by the Replica on the leaseholder:
 *
 *     request ──► LatchManager.acquire(spans)          serialize conflicting requests
 *             ──► LockTable.scanAndEnqueue(req)         wait for other txns' locks
 *                   └─ waitOn → 'push' → decidePush ──► TxnWaitQueue (deadlocks)
 *             ──► evaluate; TimestampCache.getMax(span) pushes writes above reads;
 *                 reads add(span, ts, txn)
 *             ──► LockTable.acquireLock / dequeue; latches released
 *
 * ConcurrencyManager (concurrency-manager.ts) runs that sequence; the push
 * (PushTxn, intent resolution) and the timers are injected into it.
 *
 * Pure in-memory structures driven by calls: no timers and no clock reads
 * (time arrives as timestamps, waits are bounded by the caller's promises and
 * AbortSignals). Ownership: one LatchManager, LockTable and TimestampCache per
 * range on its leaseholder; one TxnWaitQueue per store.
 */
export * from './span-set.js';
export * from './latch-manager.js';
export * from './timestamp-cache.js';
export * from './lock-table.js';
export * from './push-policy.js';
export * from './txn-wait-queue.js';
export * from './concurrency-manager.js';

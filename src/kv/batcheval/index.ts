/**
 * Registers every command (import for its side effect) and re-exports the
 * framework. Replica imports this module once.
 */
import './cmd-get.js';
import './cmd-put.js';
import './cmd-conditional-put.js';
import './cmd-delete.js';
import './cmd-delete-range.js';
import './cmd-scan.js';
import './cmd-lease-info.js';
import './cmd-lease.js';
import './cmd-compute-checksum.js';
import './cmd-truncate-log.js';
import './cmd-gc.js';
import './cmd-admin-split.js';
import './cmd-subsume.js';
import './cmd-admin-merge.js';
import './cmd-admin-change-replicas.js';

// The transaction layer's commands (txn-api.ts).
import './cmd-begin-txn.js';
import './cmd-heartbeat-txn.js';
import './cmd-end-txn.js';
import './cmd-push-txn.js';
import './cmd-query-txn.js';
import './cmd-query-intent.js';
import './cmd-resolve-intent.js';
import './cmd-recover-txn.js';
import './cmd-refresh.js';

export * from './command.js';

/**
 * The shapes of sql/kv.ts's KV contract (KVRequest, KVResult, KVTxn, KVDB),
 * restated structurally: src/kv may not import sql/ (DESIGN.md §2), and
 * TypeScript's structural typing lets TxnCoordSender / TxnDB satisfy the
 * SQL layer's interfaces without the import (test/kv-txn checks the
 * assignability against sql/kv.ts itself).
 *
 * Ownership: src/kv/client; keep in step with sql/kv.ts.
 */
import { CairnError } from '../../util/errors.js';
import type { Timestamp } from '../../util/hlc.js';
import type { KeyValue } from '../api.js';

export type KVLockStrength = 'none' | 'exclusive';

export type KVRequest =
  | { readonly kind: 'get'; readonly key: Buffer; readonly lock: KVLockStrength }
  | { readonly kind: 'scan'; readonly key: Buffer; readonly endKey: Buffer; readonly reverse: boolean; readonly limit: number; readonly targetBytes: number; readonly lock: KVLockStrength }
  | { readonly kind: 'put'; readonly key: Buffer; readonly value: Buffer }
  | { readonly kind: 'cput'; readonly key: Buffer; readonly value: Buffer; readonly expected: Buffer | null }
  | { readonly kind: 'del'; readonly key: Buffer }
  | { readonly kind: 'delRange'; readonly key: Buffer; readonly endKey: Buffer };

export type KVResult =
  | { readonly kind: 'get'; readonly value: Buffer | null }
  | { readonly kind: 'scan'; readonly rows: readonly KeyValue[]; readonly resumeKey: Buffer | null }
  | { readonly kind: 'put' }
  | { readonly kind: 'cput' }
  | { readonly kind: 'del' }
  | { readonly kind: 'delRange'; readonly deleted: number };

/** What TxnCoordSender needs of a KVBatch (sql/kv.ts's class has it). */
export interface KVBatchLike {
  readonly requests: readonly KVRequest[];
}

export type KVPriority = 'low' | 'normal' | 'high';

export interface KVTxnOptions {
  readonly priority?: KVPriority;
  readonly readOnly?: boolean;
  readonly asOf?: Timestamp;
}

/** A cput found a different value (same code as sql/kv.ts's ConditionFailedError: SQL maps it to 23505). */
export class KvConditionFailedError extends CairnError {
  override name = 'ConditionFailedError';
  constructor(
    readonly key: Buffer,
    readonly actual: Buffer | null,
  ) {
    super('kv.condition_failed', 'kv: unexpected value', { sqlState: '23505' });
  }
}

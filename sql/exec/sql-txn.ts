/**
 * sql/exec/sql-txn.ts — the SQL layer's view of one KV transaction.
 *
 * Wraps a KVTxn and adds the schema-version check of catalog.ts: the first
 * batch the transaction runs also reads the schema version key (one more
 * key in the same round trip). If the version differs from the catalog
 * snapshot the statement was planned against, SchemaChangedError (40001,
 * retryable) is thrown before any result is used. Because the read is part
 * of the serializable transaction, a concurrent schema change that commits
 * later makes this transaction restart rather than commit on a stale schema.
 *
 * On a descriptor lease (useLease, sql/catalog/lease-manager.ts) there is no
 * version read: the KV commit carries the lease's expiration as its deadline,
 * and since a statement's rows may reach the client before its commit, every
 * batch's read timestamp is checked against it too (SchemaLeaseExpiredError,
 * 40001, retryable).
 *
 * It also counts round trips (for EXPLAIN ANALYZE-style tests and the
 * benchmark) and remembers whether the transaction wrote anything.
 *
 * Ownership: one per transaction attempt, owned by the session.
 */
import { KVBatch, type KVResult, type KVTxn } from '../kv.js';
import { SCHEMA_VERSION_KEY, SchemaChangedError, type CatalogSnapshot } from '../catalog/catalog.js';
import { decodeUint } from '../catalog/descriptor.js';
import { CairnError } from '../../src/util/errors.js';
import { tsLess, type Timestamp } from '../../src/util/hlc.js';

/** A statement on a descriptor lease read at or above the lease's expiration. */
export class SchemaLeaseExpiredError extends CairnError {
  override name = 'SchemaLeaseExpiredError';
  constructor() {
    super('sql.lease_expired', 'restart transaction: the descriptor lease expired during the statement', { retryable: true, sqlState: '40001' });
  }
}

export class SqlTxn {
  /** The schema version this transaction's statements were planned against (undefined: not yet known). */
  private expectVersion: number | undefined;
  private versionChecked = false;
  roundTrips = 0;
  wrote = false;
  /** Set once the transaction changed the schema (its statements then bypass the node cache). */
  schemaDirty = false;

  /** The descriptor lease's expiration this transaction runs under (useLease). */
  private deadline: Timestamp | undefined;

  constructor(readonly kv: KVTxn) {}

  /** The leased snapshot this transaction plans against (useLease). */
  leased: CatalogSnapshot | undefined;

  /** Runs on a descriptor lease (`snapshot`, expiring at `deadline`): no version read; commit and reads stay below it. */
  useLease(deadline: Timestamp, snapshot: CatalogSnapshot): void {
    this.leased = snapshot;
    this.versionChecked = true;
    this.deadline = deadline;
    this.kv.setDeadline?.(deadline);
  }

  /** Plans use catalog snapshot `v`: the first batch will verify it. */
  expectSchemaVersion(v: number): void {
    if (this.versionChecked) return;
    this.expectVersion = v;
  }

  isSchemaChecked(): boolean {
    return this.versionChecked;
  }

  /** The version was read through this txn already (snapshot loaded via the txn). */
  markSchemaChecked(): void {
    this.versionChecked = true;
  }

  async run(batch: KVBatch): Promise<KVResult[]> {
    return this.exec(batch, false);
  }

  async commitInBatch(batch: KVBatch): Promise<KVResult[]> {
    return this.exec(batch, true);
  }

  async commit(): Promise<void> {
    if (!this.versionChecked && this.expectVersion !== undefined) {
      await this.exec(new KVBatch(), true);
      return;
    }
    this.roundTrips++;
    await this.kv.commit();
  }

  private async exec(batch: KVBatch, commit: boolean): Promise<KVResult[]> {
    for (const r of batch.requests) if (r.kind !== 'get' && r.kind !== 'scan') this.wrote = true;
    this.roundTrips++;
    if (this.versionChecked || this.expectVersion === undefined) {
      if (commit) return this.kv.commitInBatch(batch);
      const res = await this.kv.run(batch);
      if (this.deadline !== undefined && !tsLess(this.kv.readTimestamp(), this.deadline)) throw new SchemaLeaseExpiredError();
      return res;
    }
    // Prepend the version read; strip its result.
    const b = new KVBatch();
    b.get(SCHEMA_VERSION_KEY);
    for (const r of batch.requests) b.requests.push(r);
    // Check the version before committing: run, verify, then commit.
    const res = await this.kv.run(b);
    const v = res[0];
    const version = decodeUint(v?.kind === 'get' ? v.value : null);
    this.versionChecked = true;
    if (version !== this.expectVersion) throw new SchemaChangedError();
    if (commit) await this.kv.commit();
    return res.slice(1);
  }
}

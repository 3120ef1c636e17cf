/**
 * IntentResolver: resolves the intents of finished (or pushed) transactions
 * asynchronously and in batches (CockroachDB's intentresolver).
 *
 *   enqueue(update, spans) ─► pending requests ─► flush (scheduled once per turn):
 *        up to maxBatch ResolveIntent / ResolveIntentRange requests of ANY
 *        transactions in ONE batch through the Sender (the DistSender splits
 *        it by range and sends the parts in parallel: one Raft command per range)
 *
 * Failures are retried (with the injected sleep) up to `attempts` times and
 * then dropped: an unresolved intent is never a correctness problem, since
 * the next reader that meets it pushes its transaction and resolves it.
 * Ownership: one per TxnDB (node); time through the injected schedule/sleep.
 */
import { ZERO_TIMESTAMP } from '../util/hlc.js';
import type { LockUpdate } from '../../storage/mvcc.js';
import type { Request } from './api.js';
import type { Sender } from './kv-client.js';
import type { LockSpan } from './txn-api.js';

export interface IntentResolverOptions {
  readonly sender: Sender;
  /** Runs fn soon (default setImmediate). */
  readonly schedule?: (fn: () => void) => void;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly maxBatch?: number;
  readonly attempts?: number;
}

export function resolveRequests(update: LockUpdate, spans: readonly LockSpan[]): Request[] {
  const ignoredSeqNums = update.ignoredSeqNums ?? [];
  return spans.map((s) =>
    s.endKey === null
      ? { kind: 'resolveIntent' as const, key: s.key, txn: update.txn, status: update.status, ignoredSeqNums, strict: false }
      : { kind: 'resolveIntentRange' as const, key: s.key, endKey: s.endKey, txn: update.txn, status: update.status, ignoredSeqNums },
  );
}

export class IntentResolver {
  private pending: Request[] = [];
  private scheduled = false;
  private inflight = 0;
  private idle: (() => void)[] = [];
  readonly metrics = { batches: 0, requests: 0, failures: 0 };

  constructor(private readonly opts: IntentResolverOptions) {}

  /** Queues the resolution of `spans` with `update`; returns at once. */
  enqueue(update: LockUpdate, spans: readonly LockSpan[]): void {
    if (spans.length === 0) return;
    for (const q of resolveRequests(update, spans)) this.pending.push(q);
    if (this.scheduled) return;
    this.scheduled = true;
    (this.opts.schedule ?? ((fn) => void setImmediate(fn)))(() => this.flush());
  }

  /** Resolves now and waits (the caller needs the intents gone, e.g. a pusher). */
  async resolveNow(update: LockUpdate, spans: readonly LockSpan[]): Promise<void> {
    if (spans.length === 0) return;
    await this.opts.sender.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: resolveRequests(update, spans) });
  }

  /** Resolves when nothing is queued or in flight. */
  drain(): Promise<void> {
    if (this.pending.length === 0 && this.inflight === 0 && !this.scheduled) return Promise.resolve();
    return new Promise((r) => this.idle.push(r));
  }

  private flush(): void {
    this.scheduled = false;
    const max = this.opts.maxBatch ?? 1000;
    while (this.pending.length > 0) {
      const part = this.pending.length <= max ? this.pending : this.pending.slice(0, max);
      this.pending = this.pending.length <= max ? [] : this.pending.slice(max);
      this.inflight++;
      void this.sendWithRetry(part).finally(() => {
        this.inflight--;
        this.maybeIdle();
      });
    }
    this.maybeIdle();
  }

  private maybeIdle(): void {
    if (this.pending.length > 0 || this.inflight > 0 || this.scheduled) return;
    const w = this.idle;
    this.idle = [];
    for (const r of w) r();
  }

  private async sendWithRetry(requests: Request[]): Promise<void> {
    const attempts = this.opts.attempts ?? 5;
    for (let i = 0; i < attempts; i++) {
      try {
        this.metrics.batches++;
        await this.opts.sender.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests });
        this.metrics.requests += requests.length;
        return;
      } catch {
        this.metrics.failures++;
        await (this.opts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))))(20 * (i + 1));
      }
    }
  }
}

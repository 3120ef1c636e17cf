/**
 * IntentResolver: resolves the intents of finished (or pushed) transactions
 * asynchronously and in batches (CockroachDB's intentresolver).
 *
 *   enqueue(update, spans) ─► pending requests ─► flush (scheduled once per turn):
 *        batches of ResolveIntent / ResolveIntentRange requests of ANY
 *        transactions, each worth at most maxBatch keys (a point counts 1, a
 *        ranged request RESOLVE_INTENT_RANGE_MAX_KEYS — what one command
 *        resolves at most), through the Sender (the DistSender splits a batch
 *        by range and sends the parts in parallel: one Raft command per
 *        range); at most maxInFlight batches at a time
 *   a ResolveIntentRange answered with a resume key (it stopped at its
 *        limit) ─► the rest of its span is queued again
 *
 * So a transaction's lock footprint of any size — 100,000 point spans, or a
 * condensed span covering 100,000 intents (client/lock-footprint.ts) — is
 * resolved in commands of about maxBatch intents, a bounded number of them
 * in flight, instead of one command per key or one giant command.
 *
 * Failures are retried (with the injected sleep, backing off from 50 ms
 * doubling to 1 s: a leaseholder busy with a bulk import times calls out)
 * up to `attempts` times and then dropped: an unresolved intent is never a correctness problem, since
 * the next reader that meets it pushes its transaction and resolves it.
 * Ownership: one per TxnDB (node); time through the injected schedule/sleep.
 */
import { ZERO_TIMESTAMP } from '../util/hlc.js';
import type { LockUpdate } from '../../storage/mvcc.js';
import type { BatchResponse, Request } from './api.js';
import { RESOLVE_INTENT_RANGE_MAX_KEYS } from './batcheval/cmd-resolve-intent.js';
import type { Sender } from './kv-client.js';
import type { LockSpan, ResolveIntentRangeRequest, TxnFoundResponse } from './txn-api.js';

export interface IntentResolverOptions {
  readonly sender: Sender;
  /** Runs fn soon (default setImmediate). */
  readonly schedule?: (fn: () => void) => void;
  readonly sleep?: (ms: number) => Promise<void>;
  /** Keys' worth of requests per batch (default 1000). */
  readonly maxBatch?: number;
  /** Batches in flight at most (default 4). */
  readonly maxInFlight?: number;
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

/** The ranged requests of `requests` that stopped at their limit, narrowed to what is left. */
function resumeRequests(requests: readonly Request[], res: BatchResponse): Request[] {
  const out: Request[] = [];
  for (let i = 0; i < requests.length; i++) {
    const q = requests[i] as Request;
    if (q.kind !== 'resolveIntentRange') continue;
    const resume = (res.responses[i] as TxnFoundResponse | undefined)?.resumeKey ?? null;
    if (resume !== null) out.push({ ...q, key: resume } satisfies ResolveIntentRangeRequest);
  }
  return out;
}

function weight(q: Request): number {
  return q.kind === 'resolveIntentRange' ? RESOLVE_INTENT_RANGE_MAX_KEYS : 1;
}

export class IntentResolver {
  private pending: Request[] = [];
  private scheduled = false;
  private inflight = 0;
  private idle: (() => void)[] = [];
  readonly metrics = { batches: 0, requests: 0, failures: 0, resumed: 0 };

  constructor(private readonly opts: IntentResolverOptions) {}

  /** Queues the resolution of `spans` with `update`; returns at once. */
  enqueue(update: LockUpdate, spans: readonly LockSpan[]): void {
    if (spans.length === 0) return;
    for (const q of resolveRequests(update, spans)) this.pending.push(q);
    this.schedule();
  }

  /** Resolves now and waits (the caller needs the intents gone, e.g. a pusher), following resume keys. */
  async resolveNow(update: LockUpdate, spans: readonly LockSpan[]): Promise<void> {
    let requests = resolveRequests(update, spans);
    while (requests.length > 0) {
      const res = await this.opts.sender.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests });
      requests = resumeRequests(requests, res);
    }
  }

  /** Resolves when nothing is queued or in flight. */
  drain(): Promise<void> {
    if (this.pending.length === 0 && this.inflight === 0 && !this.scheduled) return Promise.resolve();
    return new Promise((r) => this.idle.push(r));
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    (this.opts.schedule ?? ((fn) => void setImmediate(fn)))(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    const max = this.opts.maxBatch ?? 1000;
    const maxInFlight = this.opts.maxInFlight ?? 4;
    let next = 0;
    while (next < this.pending.length && this.inflight < maxInFlight) {
      let w = 0;
      let end = next;
      while (end < this.pending.length && (end === next || w + weight(this.pending[end] as Request) <= max)) w += weight(this.pending[end++] as Request);
      const part = this.pending.slice(next, end);
      next = end;
      this.inflight++;
      void this.sendWithRetry(part).finally(() => {
        this.inflight--;
        // A finished batch makes room for the next ones.
        if (this.pending.length > 0) this.schedule();
        this.maybeIdle();
      });
    }
    this.pending = next === 0 ? this.pending : this.pending.slice(next);
    this.maybeIdle();
  }

  private maybeIdle(): void {
    if (this.pending.length > 0 || this.inflight > 0 || this.scheduled) return;
    const w = this.idle;
    this.idle = [];
    for (const r of w) r();
  }

  private async sendWithRetry(requests: Request[]): Promise<void> {
    const attempts = this.opts.attempts ?? 8;
    for (let i = 0; i < attempts; i++) {
      try {
        this.metrics.batches++;
        const res = await this.opts.sender.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests });
        this.metrics.requests += requests.length;
        for (const q of resumeRequests(requests, res)) {
          this.metrics.resumed++;
          this.pending.push(q);
        }
        return;
      } catch {
        this.metrics.failures++;
        await (this.opts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))))(Math.min(1000, 50 * 2 ** i));
      }
    }
  }
}

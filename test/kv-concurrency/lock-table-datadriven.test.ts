// Datadriven lock-table transcripts (issue 5; DESIGN.md §5.1), one file per
// behaviour in src/kv/concurrency/testdata/lock_table/. The harness wires the
// lock table to the push policy and the txn wait queue the way the replica's
// request sequencer will, with manual push delays and deadlines.
//
// Verbs (ts=10 means wall 10 s; ts=10,1 adds logical 1; expiry in seconds):
//   new-txn txn=t1 ts=10 [epoch=0] [priority=1] [start=10]   a transaction (start: its age;
//                                      its record was last active at ts)
//   new-request r=req1 txn=t1|none ts=10 spans=(w:a,r:b-d)   w: write, r: read; b-d is [b,d)
//   scan r=req1                        scanAndEnqueue (keeps the request's place on a re-scan)
//   guard-state r=req1                 the request's waiting state
//   acquire r=req1 k=a [durability=replicated]   the request's txn acquires the lock on a
//   add-discovered r=req1 k=a txn=t2   an intent of t2 met while evaluating; then re-scan
//   update txn=t1 status=committed|aborted|pending [ts=12] [span=a|a-z]   intent resolution
//                                      (also reported to the txn wait queue)
//   dequeue r=req1                     the request finished or gave up
//   print | metrics                    the lock table
//   wait r=req1                        waitOn with a manual push delay and deadline
//   fire-push r=req1 | fire-deadline r=req1 | cancel r=req1
//   wait-result r=req1                 the outcome of the last wait, or "waiting"
//   txn-record txn=t1 [heartbeat=5] [status=pending|staging]   the pushee's record as the pusher reads it
//   push r=req1 now=20 [expiry=5]      after a 'push' outcome: decide (push-policy.ts) and apply;
//                                      'wait' queues in the txn wait queue (deadlocks are found here)
//   push-result r=req1                 the outcome of the txn-wait-queue wait
//   waits-for                          the waits-for edges
import { describe, it } from 'vitest';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { runDataDriven, type TestCase } from '../support/datadriven.js';
import { LockTable, type LockRequest, type LockTableGuard, type LockTxn, type WaitOutcome } from '../../src/kv/concurrency/lock-table.js';
import { decidePush, type PusheeRecord, type TxnRecordStatus } from '../../src/kv/concurrency/push-policy.js';
import { TxnWaitQueue, type PendingPush, type PushWaitOutcome } from '../../src/kv/concurrency/txn-wait-queue.js';
import type { DeclaredSpan, Span } from '../../src/kv/concurrency/span-set.js';
import { formatTimestamp, tsMax, tsNext, ts, type Timestamp } from '../../src/util/hlc.js';
import { isCairnError } from '../../src/util/errors.js';
import { flushMicrotasks, k } from './support.js';

const testdata = join(import.meta.dirname, '../../src/kv/concurrency/testdata/lock_table');

function parseTs(s: string): Timestamp {
  const [w, l] = s.split(',');
  return ts(Number(w) * 1e6, Number(l ?? 0));
}

function parseSpan(s: string): Span {
  const dash = s.indexOf('-');
  return dash < 0 ? { key: k(s) } : { key: k(s.slice(0, dash)), endKey: k(s.slice(dash + 1)) };
}

interface TxnInfo {
  meta: LockTxn;
  start: Timestamp;
  record: { status: TxnRecordStatus; lastActive: Timestamp };
}

interface Req {
  req: LockRequest;
  guard: LockTableGuard | null;
  dequeued: boolean;
  wait: { outcome: WaitOutcome | null; error: unknown; fire: () => void; expire: () => void; abort: AbortController } | null;
  lastPush: Extract<WaitOutcome, { kind: 'push' }> | null;
  pending: { push: PendingPush; outcome: PushWaitOutcome | null } | null;
}

class Harness {
  lt = new LockTable();
  twq = new TxnWaitQueue();
  txns = new Map<string, TxnInfo>();
  reqs = new Map<string, Req>();
  fmt = (t: LockTxn): string => t.id.toString('latin1');

  txn(tc: TestCase, name = tc.arg('txn')): TxnInfo {
    const t = this.txns.get(name);
    if (t === undefined) tc.fail(`unknown txn ${name}`);
    return t;
  }

  req(tc: TestCase): Req {
    const r = this.reqs.get(tc.arg('r'));
    if (r === undefined) tc.fail(`unknown request ${tc.arg('r')}`);
    return r;
  }

  guard(tc: TestCase): LockTableGuard {
    const g = this.req(tc).guard;
    if (g === null) tc.fail('request not scanned yet');
    return g;
  }

  state(r: Req): string {
    return r.guard === null ? 'not scanned' : this.lt.guardState(r.guard, this.fmt);
  }

  async run(tc: TestCase): Promise<string> {
    switch (tc.cmd) {
      case 'new-txn': {
        const name = tc.arg('txn');
        const start = parseTs(tc.arg('start', tc.arg('ts')));
        const meta: LockTxn = { id: Buffer.from(name, 'latin1'), epoch: tc.intArg('epoch', 0), writeTimestamp: parseTs(tc.arg('ts')), priority: tc.intArg('priority', 1), minTimestamp: start };
        this.txns.set(name, { meta, start, record: { status: 'pending', lastActive: meta.writeTimestamp } });
        return '';
      }
      case 'new-request': {
        const txnName = tc.arg('txn');
        const spans: DeclaredSpan[] = tc.args('spans').map((s) => {
          const [a, sp] = s.split(':');
          return { access: a === 'w' ? 'write' : 'read', span: parseSpan(sp ?? '') };
        });
        const req: LockRequest = { txn: txnName === 'none' ? undefined : this.txn(tc, txnName).meta, timestamp: parseTs(tc.arg('ts')), spans, name: tc.arg('r') };
        this.reqs.set(tc.arg('r'), { req, guard: null, dequeued: false, wait: null, lastPush: null, pending: null });
        return '';
      }
      case 'scan': {
        const r = this.req(tc);
        // A re-scan sees the transaction's current timestamp (e.g. after its own push).
        const txn = r.req.txn === undefined ? undefined : this.txns.get(this.fmt(r.req.txn))?.meta;
        r.req = { ...r.req, txn };
        try {
          r.guard = this.lt.scanAndEnqueue(r.req, r.guard ?? undefined);
        } catch (e) {
          if (isCairnError(e)) return `error: ${e.code}: ${e.message}`;
          throw e;
        }
        return this.state(r);
      }
      case 'guard-state':
        return this.state(this.req(tc));
      case 'acquire': {
        const r = this.req(tc);
        if (r.req.txn === undefined) tc.fail('non-transactional requests do not acquire locks');
        this.lt.acquireLock(r.req.txn, k(tc.arg('k')), tc.arg('durability', 'unreplicated') === 'replicated' ? 'replicated' : 'unreplicated');
        return this.lt.lockTableState(this.fmt);
      }
      case 'add-discovered': {
        const r = this.req(tc);
        this.lt.addDiscoveredLock({ key: k(tc.arg('k')), txn: this.txn(tc).meta });
        r.guard = this.lt.scanAndEnqueue(r.req, r.guard ?? undefined);
        return `${this.lt.lockTableState(this.fmt)}\n${r.req.name}: ${this.state(r)}`;
      }
      case 'update': {
        const t = this.txn(tc);
        const status = tc.arg('status') as 'pending' | 'committed' | 'aborted';
        if (tc.hasArg('ts')) t.meta = { ...t.meta, writeTimestamp: tsMax(t.meta.writeTimestamp, parseTs(tc.arg('ts'))) };
        if (status !== 'pending') t.record.status = status;
        const span = tc.hasArg('span') ? parseSpan(tc.arg('span')) : { key: Buffer.alloc(0), endKey: Buffer.from([0xff]) };
        const n = this.lt.updateLocks({ span, txn: t.meta, status });
        this.twq.updateTxn(tc.arg('txn'), status, t.meta.writeTimestamp);
        return `updated ${n} lock(s)\n${this.lt.lockTableState(this.fmt)}\n${this.guardStates()}`;
      }
      case 'dequeue': {
        const r = this.req(tc);
        if (r.guard !== null) this.lt.dequeue(r.guard);
        r.dequeued = true;
        return `${this.lt.lockTableState(this.fmt)}\n${this.guardStates()}`;
      }
      case 'print':
        return this.lt.lockTableState(this.fmt);
      case 'metrics':
        return Object.entries(this.lt.metrics()).map(([a, b]) => `${a}: ${b}`).join('\n');
      case 'wait': {
        const r = this.req(tc);
        const g = this.guard(tc);
        let fire!: () => void;
        let expire!: () => void;
        const pushAfter = new Promise<void>((res) => (fire = res));
        const deadline = new Promise<void>((res) => (expire = res));
        const abort = new AbortController();
        const w: NonNullable<Req['wait']> = { outcome: null, error: null, fire, expire, abort };
        r.wait = w;
        this.lt.waitOn(g, { pushAfter, deadline, signal: abort.signal }).then(
          (o) => {
            w.outcome = o;
            if (o.kind === 'push') r.lastPush = o;
          },
          (e: unknown) => (w.error = e),
        );
        return this.waitResult(r);
      }
      case 'fire-push':
        this.req(tc).wait?.fire();
        return this.waitResult(this.req(tc));
      case 'fire-deadline':
        this.req(tc).wait?.expire();
        return this.waitResult(this.req(tc));
      case 'cancel':
        this.req(tc).wait?.abort.abort(new Error('client went away'));
        return this.waitResult(this.req(tc));
      case 'wait-result':
        return this.waitResult(this.req(tc));
      case 'txn-record': {
        const t = this.txn(tc);
        if (tc.hasArg('heartbeat')) t.record.lastActive = parseTs(tc.arg('heartbeat'));
        if (tc.hasArg('status')) t.record.status = tc.arg('status') as TxnRecordStatus;
        return '';
      }
      case 'push':
        return this.push(tc);
      case 'push-result': {
        await flushMicrotasks();
        const p = this.req(tc).pending;
        return p === null ? 'no push' : p.outcome === null ? 'waiting' : fmtPushOutcome(p.outcome);
      }
      case 'waits-for':
        return this.twq.waitsFor().map(([a, b]) => `${a} -> ${b}`).join('\n') || 'none';
      default:
        tc.fail('unknown verb');
    }
  }

  private guardStates(): string {
    const out: string[] = [];
    for (const [name, r] of this.reqs) if (r.guard !== null && !r.dequeued) out.push(`${name}: ${this.state(r)}`);
    return out.join('\n');
  }

  private async waitResult(r: Req): Promise<string> {
    await flushMicrotasks();
    const w = r.wait;
    if (w === null) return 'no wait';
    if (w.error !== null) return isCairnError(w.error) ? `error: ${w.error.code}: ${w.error.message}` : `error: ${String(w.error)}`;
    const o = w.outcome;
    if (o === null) return `waiting: ${this.state(r)}`;
    if (o.kind === 'done') return 'done';
    return `push ${this.fmt(o.pushee)} (${o.pushType}) at ${o.key.toString('latin1')}${o.isHead ? ' head' : ''}${o.held ? '' : ' claimant'}`;
  }

  /** Decides the push of the last 'push' outcome and applies it, or queues in the txn wait queue. */
  private push(tc: TestCase): string {
    const r = this.req(tc);
    const o = r.lastPush;
    if (o === null) tc.fail('no push outcome to act on');
    const pushee = this.txn(tc, this.fmt(o.pushee));
    const pusherPri = r.req.txn?.priority ?? 1;
    const pushTo = tsNext(r.req.timestamp);
    const rec: PusheeRecord = { status: pushee.record.status, priority: pushee.meta.priority ?? 1, writeTimestamp: pushee.meta.writeTimestamp, lastActive: pushee.record.lastActive };
    const d = decidePush(rec, { pushType: o.pushType, pusherPriority: pusherPri, pushTo, now: parseTs(tc.arg('now')), expiryMicros: tc.intArg('expiry', 5) * 1e6 });
    const lines = [`decision: ${d.kind}${d.kind === 'push' ? ` (${d.reason})` : ''}`];
    const name = this.fmt(o.pushee);
    if (d.kind === 'push' && d.pushType === 'abort') {
      pushee.record.status = 'aborted';
      lines.push(`${name} aborted; resolving its intents`, this.runUpdate(name, 'aborted'));
    } else if (d.kind === 'push') {
      pushee.meta = { ...pushee.meta, writeTimestamp: tsMax(pushee.meta.writeTimestamp, pushTo) };
      lines.push(`${name} pushed to ${formatTimestamp(pushee.meta.writeTimestamp)}; resolving its intents`, this.runUpdate(name, 'pending'));
    } else if (d.kind === 'wait') {
      const pusherName = r.req.txn === undefined ? (r.req.name ?? 'non-txn') : this.fmt(r.req.txn);
      const pusherInfo = this.txns.get(pusherName);
      const push = this.twq.enqueue({ id: pusherName, priority: pusherPri, minTimestamp: pusherInfo?.start ?? r.req.timestamp }, { id: name, priority: rec.priority, minTimestamp: pushee.start }, o.pushType, pushTo);
      const pending: NonNullable<Req['pending']> = { push, outcome: null };
      r.pending = pending;
      void this.twq.wait(push).then((x) => (pending.outcome = x));
      lines.push(`${pusherName} waits for ${name} in the txn wait queue`);
      // Pushes answered by this one (a deadlock it closed).
      for (const [rn, q] of this.reqs) if (q.pending !== null && q.pending.outcome === null && q.pending.push.done) lines.push(`${rn}: ${fmtPushOutcome(q.pending.push.outcome as PushWaitOutcome)}`);
    }
    return lines.join('\n');
  }

  private runUpdate(name: string, status: 'pending' | 'committed' | 'aborted'): string {
    const t = this.txns.get(name) as TxnInfo;
    const n = this.lt.updateLocks({ span: { key: Buffer.alloc(0), endKey: Buffer.from([0xff]) }, txn: t.meta, status });
    this.twq.updateTxn(name, status, t.meta.writeTimestamp);
    return `updated ${n} lock(s)\n${this.guardStates()}`;
  }
}

function fmtPushOutcome(o: PushWaitOutcome): string {
  switch (o.kind) {
    case 'deadlock':
      return `deadlock: abort ${o.victim}`;
    case 'pushee-finalized':
    case 'pusher-finalized':
      return `${o.kind} (${o.status})`;
    case 'pushee-pushed':
      return `pushee-pushed to ${formatTimestamp(o.writeTimestamp)}`;
  }
}

describe('lock table (datadriven)', () => {
  for (const file of readdirSync(testdata).filter((f) => f.endsWith('.txt')).sort()) {
    it(file, async () => {
      const h = new Harness();
      await runDataDriven(join(testdata, file), (tc) => h.run(tc));
    });
  }
});

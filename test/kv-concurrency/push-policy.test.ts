// Push decisions and deadlock-victim choice as tables (issue 5: "a waiter
// pushes the holder — abort or push its timestamp — by priority and by
// whether its record is still heartbeated"; CockroachDB cmd_push_txn.go).
import { describe, it, expect } from 'vitest';
import { canPushWithPriority, chooseDeadlockVictim, decidePush, isTxnExpired, shouldPush, MAX_TXN_PRIORITY, MIN_TXN_PRIORITY, type PushArgs, type PusheeRecord } from '../../src/kv/concurrency/push-policy.js';
import { ts } from '../../src/util/hlc.js';

const S = 1_000_000;

describe('push policy', () => {
  it('canPushWithPriority', () => {
    const table: [number, number, boolean][] = [
      [5, 4, true],
      [4, 5, false],
      [5, 5, false],
      [MAX_TXN_PRIORITY, MAX_TXN_PRIORITY - 1, true],
      [MAX_TXN_PRIORITY, MAX_TXN_PRIORITY, false],
      [1, MIN_TXN_PRIORITY, true],
      [MIN_TXN_PRIORITY, MIN_TXN_PRIORITY, false],
      [MIN_TXN_PRIORITY, 1, false],
    ];
    for (const [pusher, pushee, want] of table) expect(canPushWithPriority(pusher, pushee), `${pusher} vs ${pushee}`).toBe(want);
  });

  it('isTxnExpired counts from the last activity', () => {
    expect(isTxnExpired(ts(10 * S), ts(14 * S), 5 * S)).toBe(false);
    expect(isTxnExpired(ts(10 * S), ts(15 * S), 5 * S)).toBe(false);
    expect(isTxnExpired(ts(10 * S), ts(15 * S + 1), 5 * S)).toBe(true);
  });

  it('decidePush', () => {
    const live: PusheeRecord = { status: 'pending', priority: 5, writeTimestamp: ts(10 * S), lastActive: ts(9 * S) };
    const args: PushArgs = { pushType: 'abort', pusherPriority: 5, pushTo: ts(11 * S), now: ts(10 * S), expiryMicros: 5 * S };
    const table: [string, PusheeRecord, Partial<PushArgs>, string][] = [
      ['committed pushee', { ...live, status: 'committed' }, {}, 'already-finalized'],
      ['aborted pushee', { ...live, status: 'aborted' }, { pushType: 'timestamp' }, 'already-finalized'],
      ['timestamp push already satisfied', { ...live, writeTimestamp: ts(11 * S) }, { pushType: 'timestamp' }, 'already-pushed'],
      ['abort push ignores the timestamp', { ...live, writeTimestamp: ts(11 * S) }, {}, 'wait'],
      ['live, equal priority', live, {}, 'wait'],
      ['live, lower priority pusher', live, { pusherPriority: 4 }, 'wait'],
      ['live, higher priority pusher', live, { pusherPriority: 6 }, 'push:priority'],
      ['live, timestamp push by priority', live, { pushType: 'timestamp', pusherPriority: 6 }, 'push:priority'],
      ['expired (no heartbeat for longer than the expiry)', live, { now: ts(15 * S), pusherPriority: 1 }, 'push:expired'],
      ['expired, timestamp push: aborted all the same', live, { now: ts(15 * S), pushType: 'timestamp' }, 'push:expired'],
      ['forced (deadlock victim)', live, { force: true }, 'push:force'],
      ['staging, live: only recovery decides', { ...live, status: 'staging' }, { pusherPriority: 9 }, 'wait'],
      ['staging, expired', { ...live, status: 'staging' }, { now: ts(20 * S) }, 'recover'],
      ['staging, forced', { ...live, status: 'staging' }, { force: true }, 'recover'],
    ];
    for (const [name, rec, over, want] of table) {
      const d = decidePush(rec, { ...args, ...over });
      expect(d.kind === 'push' ? `push:${d.reason}` : d.kind, name).toBe(want);
      expect(shouldPush(rec, { ...args, ...over }), name).toBe(want.startsWith('push:'));
      if (d.kind === 'push') expect(d.pushType, name).toBe(d.reason === 'expired' ? 'abort' : (over.pushType ?? 'abort'));
    }
  });

  it('chooseDeadlockVictim: lowest priority, then youngest, then largest id', () => {
    const c = (id: string, priority: number, start: number) => ({ id, priority, minTimestamp: ts(start) });
    const table: [ReturnType<typeof c>[], string][] = [
      [[c('a', 5, 1), c('b', 3, 1), c('c', 4, 9)], 'b'],
      [[c('a', 5, 1), c('b', 5, 3), c('c', 5, 2)], 'b'],
      [[c('a', 5, 3), c('b', 5, 3)], 'b'],
      [[c('b', 5, 3), c('a', 5, 3)], 'b'],
      [[c('x', 1, 0)], 'x'],
    ];
    for (const [cycle, want] of table) {
      expect(chooseDeadlockVictim(cycle).id).toBe(want);
      // The choice does not depend on where the cycle is entered.
      expect(chooseDeadlockVictim([...cycle.slice(1), ...cycle.slice(0, 1)]).id).toBe(want);
    }
  });
});

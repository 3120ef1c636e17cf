// Micro-benchmarks of the concurrency structures (issue 5 asks for these
// numbers). Not a test (never asserted): compile and run by hand, e.g.
//   npx tsc -p . && node dist/test/kv-concurrency/concurrency-bench.js
// Prints: latch acquire/release pairs per second with 1,000 latches held;
// timestamp-cache add and getMax per second at 100,000 entries; lock-table
// scan/acquire/release cycles per second with 1,000 locks held.
import { LatchManager } from '../../src/kv/concurrency/latch-manager.js';
import { TimestampCache } from '../../src/kv/concurrency/timestamp-cache.js';
import { LockTable, type LockTxn } from '../../src/kv/concurrency/lock-table.js';
import type { SpanSet } from '../../src/kv/concurrency/span-set.js';
import { Prng } from '../../src/util/prng.js';
import { ts } from '../../src/util/hlc.js';

const rng = new Prng(Number(process.env['SEED'] ?? 1));
const key = (i: number): Buffer => Buffer.from(`/Table/52/1/${String(i).padStart(10, '0')}`);

// The machine is shared: rates are per second of this process's CPU time
// (user + system), which other processes' load disturbs far less than wall time.
function cpuSeconds(c0: NodeJS.CpuUsage): number {
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1e6;
}

function report(label: string, n: number, secs: number): void {
  console.log(`${label}: ${Math.round(n / secs).toLocaleString('en-US')}/s (${n} in ${secs.toFixed(3)} s CPU)`);
}

function rate(label: string, n: number, fn: () => void): void {
  const c0 = process.cpuUsage();
  fn();
  report(label, n, cpuSeconds(c0));
}

async function latches(): Promise<void> {
  const m = new LatchManager();
  // 1,000 held latches: writes on even keys, reads on odd keys, a few ranges.
  for (let i = 0; i < 1000; i++) {
    const span = i % 50 === 0 ? { key: key(i * 10), endKey: key(i * 10 + 5) } : { key: key(i * 10) };
    await m.acquire([{ access: i % 2 === 0 ? 'write' : 'read', span, timestamp: ts(100) }]);
  }
  // Pairs on keys between the held ones (non-conflicting): acquire resolves at once.
  const N = 200_000;
  const sets: SpanSet[] = [];
  for (let i = 0; i < 1024; i++) sets.push([{ access: 'write', span: { key: key(rng.nextUint32() % 10_000 * 10 + 7) }, timestamp: ts(200) }]);
  let c0 = process.cpuUsage();
  for (let i = 0; i < N; i++) (await m.acquire(sets[i & 1023] as SpanSet)).release();
  report('latch acquire+release pairs (await), 1,000 held', N, cpuSeconds(c0));
  rate('latch tryAcquire+release (sync), 1,000 held', N, () => {
    for (let i = 0; i < N; i++) m.tryAcquire(sets[i & 1023] as SpanSet)?.release();
  });
  // Conflicting chain: each acquire waits for the previous holder.
  const hot: SpanSet = [{ access: 'write', span: { key: key(99_999_999) } }];
  const M = 50_000;
  c0 = process.cpuUsage();
  let prev = await m.acquire(hot);
  for (let i = 0; i < M; i++) {
    const next = m.acquire(hot);
    prev.release();
    prev = await next;
  }
  prev.release();
  report('latch handoff on one hot key (each acquire waits), 1,000 held', M, cpuSeconds(c0));
}

function tscache(): void {
  const c = new TimestampCache({ maxBytes: 1 << 30 });
  for (let i = 0; i < 100_000; i++) c.add({ key: key(i * 2) }, ts(1000 + (rng.nextUint32() % 1000)), `t${i % 97}`);
  console.log(`tscache entries: ${c.metrics().entries}`);
  const N = 200_000;
  const keys: Buffer[] = [];
  for (let i = 0; i < 4096; i++) keys.push(key(rng.nextUint32() % 200_000));
  rate('tscache getMax (point), 100k entries', N, () => {
    for (let i = 0; i < N; i++) c.getMax({ key: keys[i & 4095] as Buffer });
  });
  rate('tscache getMax (range of ~10 entries), 100k entries', N, () => {
    for (let i = 0; i < N; i++) {
      const k0 = keys[i & 4095] as Buffer;
      c.getMax({ key: k0, endKey: key(Number(k0.toString('latin1').slice(12)) + 20) });
    }
  });
  rate('tscache add (point, existing keys), 100k entries', N, () => {
    for (let i = 0; i < N; i++) c.add({ key: keys[i & 4095] as Buffer }, ts(3000 + i));
  });
  console.log(`tscache entries: ${c.metrics().entries}`);
  // Under a budget: evictions keep it bounded.
  const small = new TimestampCache({ maxBytes: 8 << 20 });
  rate('tscache add (new point keys) under an 8 MiB budget', N, () => {
    for (let i = 0; i < N; i++) small.add({ key: key(i) }, ts(1 + i));
  });
  console.log(`  → entries ${small.metrics().entries}, evictions ${small.metrics().evictions}`);
}

function lockTable(): void {
  const lt = new LockTable();
  const txn = (i: number): LockTxn => ({ id: Buffer.from(`txn-${i}`.padEnd(16, '.')), epoch: 0, writeTimestamp: ts(100) });
  for (let i = 0; i < 1000; i++) lt.acquireLock(txn(i), key(i * 10));
  const N = 100_000;
  rate('lock table scan+acquire+release (uncontended), 1,000 locks held', N, () => {
    for (let i = 0; i < N; i++) {
      const t = txn(10_000 + (i & 1023));
      const k = key((rng.nextUint32() % 10_000) * 10 + 5);
      const g = lt.scanAndEnqueue({ txn: t, timestamp: ts(200), spans: [{ access: 'write', span: { key: k } }] });
      lt.acquireLock(t, k);
      lt.dequeue(g);
      lt.updateLocks({ span: { key: k }, txn: t, status: 'committed' });
    }
  });
}

await latches();
tscache();
lockTable();

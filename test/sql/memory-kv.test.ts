/**
 * MemoryKV (test/support/memory-kv.ts), the KV stand-in of the SQL tests: it
 * must honour the sql/kv.ts contract — batches in order, read-your-writes,
 * cput, limits with resume keys, savepoints — and be serializable, so that
 * the SQL layer's 40001 paths are exercised for real.
 */
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { KVBatch, type KVResult, type KVTxn } from '../../sql/kv.js';
import { MemoryKV } from '../support/memory-kv.js';

const key = (s: string): Buffer => Buffer.from(s);
const val = (n: number): Buffer => Buffer.from(String(n));

async function get(t: KVTxn, k: string): Promise<number | null> {
  const b = new KVBatch();
  b.get(key(k));
  const [r] = await t.run(b);
  return r?.kind === 'get' && r.value !== null ? Number(r.value.toString()) : null;
}

async function put(t: KVTxn, k: string, v: number): Promise<void> {
  const b = new KVBatch();
  b.put(key(k), val(v));
  await t.run(b);
}

describe('MemoryKV', () => {
  it('applies a batch in order with read-your-writes, cput and delRange', async () => {
    const db = new MemoryKV();
    const t = db.newTxn();
    const b = new KVBatch();
    b.put(key('a'), val(1));
    b.get(key('a'));
    b.cput(key('b'), val(2), null);
    b.cput(key('b'), val(3), val(2));
    b.scan(key('a'), key('z'));
    b.delRange(key('a'), key('b'));
    b.get(key('a'));
    const r = await t.run(b);
    expect(r.map((x: KVResult) => x.kind)).toEqual(['put', 'get', 'cput', 'cput', 'scan', 'delRange', 'get']);
    expect(r[1]).toEqual({ kind: 'get', value: val(1) });
    expect(r[4]?.kind === 'scan' && r[4].rows.map((x) => x.value.toString())).toEqual(['1', '3']);
    expect(r[6]).toEqual({ kind: 'get', value: null });
    const bad = new KVBatch();
    bad.cput(key('b'), val(9), null);
    await expect(t.run(bad)).rejects.toMatchObject({ code: 'kv.condition_failed' });
    await t.commit();
  });

  it('scans resume after a limit, forward and in reverse', async () => {
    const db = new MemoryKV();
    const w = db.newTxn();
    for (let i = 0; i < 10; i++) await put(w, `k${i}`, i);
    await w.commit();
    for (const reverse of [false, true]) {
      const t = db.newTxn();
      let start = key('k');
      let end = key('l');
      const seen: string[] = [];
      for (;;) {
        const b = new KVBatch();
        if (reverse) b.reverseScan(start, end, { limit: 3 });
        else b.scan(start, end, { limit: 3 });
        const [r] = await t.run(b);
        if (r?.kind !== 'scan') throw new Error('scan');
        seen.push(...r.rows.map((x) => x.value.toString()));
        if (r.resumeKey === null) break;
        if (reverse) end = r.resumeKey;
        else start = r.resumeKey;
      }
      const want = ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'];
      expect(seen).toEqual(reverse ? want.reverse() : want);
    }
  });

  it('an open transaction keeps reading its snapshot however often the key is overwritten', async () => {
    const db = new MemoryKV();
    const init = db.newTxn();
    await put(init, 'hot', 0);
    await init.commit();
    const reader = db.newTxn();
    expect(await get(reader, 'hot')).toBe(0);
    for (let i = 1; i <= 50; i++) {
      const w = db.newTxn();
      await put(w, 'hot', i);
      await w.commit();
    }
    expect(await get(reader, 'hot')).toBe(0);
    await reader.rollback();
    const fresh = db.newTxn();
    expect(await get(fresh, 'hot')).toBe(50);
  });

  it('savepoints undo later writes', async () => {
    const db = new MemoryKV();
    const t = db.newTxn();
    await put(t, 'x', 1);
    const sp = await t.createSavepoint();
    await put(t, 'x', 2);
    await put(t, 'y', 2);
    await t.rollbackToSavepoint(sp);
    expect(await get(t, 'x')).toBe(1);
    expect(await get(t, 'y')).toBe(null);
  });

  it('prevents write skew: the second of two conflicting transactions gets a retryable error', async () => {
    const db = new MemoryKV();
    const init = db.newTxn();
    await put(init, 'x', 1);
    await put(init, 'y', 1);
    await init.commit();
    const a = db.newTxn();
    const b = db.newTxn();
    // Each reads both and zeroes one if the sum allows it: only one may win.
    expect((await get(a, 'x')) as number + ((await get(a, 'y')) as number)).toBe(2);
    await get(b, 'x');
    await get(b, 'y');
    await put(a, 'x', 0);
    await put(b, 'y', 0);
    await a.commit();
    await expect(b.commit()).rejects.toMatchObject({ retryable: true, sqlState: '40001' });
    await b.restart();
    expect(await get(b, 'x')).toBe(0);
  });

  it('interleaved transfers keep the total: committed history is serializable (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.nat(3), fc.nat(3), fc.nat(5), fc.nat(2)), { minLength: 1, maxLength: 25 }), async (ops) => {
        const db = new MemoryKV();
        const init = db.newTxn();
        for (let i = 0; i < 4; i++) await put(init, `acct${i}`, 100);
        await init.commit();
        // Start all transfers, interleave reads and writes by their order, commit in a shuffled order.
        const txns = ops.map(() => db.newTxn());
        const reads: (number | null)[][] = [];
        for (const [i, [from, to]] of ops.entries()) reads[i] = [await get(txns[i] as KVTxn, `acct${from}`), await get(txns[i] as KVTxn, `acct${to}`)];
        for (const [i, [from, to, amount]] of ops.entries()) {
          if (from === to) continue;
          const [f, t] = reads[i] as [number, number];
          await put(txns[i] as KVTxn, `acct${from}`, f - amount);
          await put(txns[i] as KVTxn, `acct${to}`, t + amount);
        }
        let committed = 0;
        for (const [i, t] of txns.entries()) {
          if ((ops[i] as number[])[3] === 0) {
            await t.rollback();
            continue;
          }
          try {
            await t.commit();
            committed++;
          } catch (e) {
            expect((e as { retryable: boolean }).retryable).toBe(true);
          }
        }
        expect(committed).toBeGreaterThanOrEqual(0);
        const check = db.newTxn();
        let total = 0;
        for (let i = 0; i < 4; i++) total += (await get(check, `acct${i}`)) ?? 0;
        expect(total).toBe(400);
      }),
      { numRuns: 100 },
    );
  });
});

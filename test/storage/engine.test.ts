// Engine conformance suite (issue 2): ONE suite, run against LevelEngine and
// MemoryEngine; plus a model test of both against a sorted Map, the batch repr
// codec, and the store lock held by a real second process.
import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import fc from 'fast-check';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { LevelEngine } from '../../storage/level-engine.js';
import { MemoryEngine } from '../../storage/memory-engine.js';
import { SkipList, decodeBatchRepr, encodeBatchRepr, type SkipNode, type Engine, type EngineIterator, type Entry, type IterOptions, type Reader } from '../../storage/engine.js';
import { CorruptionError } from '../../src/util/errors.js';

const b = (s: string): Buffer => Buffer.from(s);

async function drain(it: EngineIterator, chunk = 3): Promise<string[]> {
  const out: string[] = [];
  try {
    for (;;) {
      const rows: Entry[] = await it.nextBatch(chunk);
      if (rows.length === 0) return out;
      for (const r of rows) out.push(`${r.key.toString()}=${r.value.toString()}`);
    }
  } finally {
    await it.close();
  }
}

const scan = (r: Reader, opts: IterOptions, chunk?: number): Promise<string[]> => drain(r.iterator(opts), chunk);

interface Harness {
  name: string;
  open(): Promise<Engine>;
  cleanup(): void;
}

function levelHarness(): Harness {
  // Every directory opened since the last cleanup (a test may open a second engine).
  const dirs: string[] = [];
  return {
    name: 'LevelEngine',
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'cairn-engine-'));
      dirs.push(dir);
      return LevelEngine.open(dir);
    },
    cleanup() {
      for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
    },
  };
}

const memoryHarness = (): Harness => ({ name: 'MemoryEngine', open: async () => new MemoryEngine(), cleanup() {} });

for (const mk of [levelHarness, memoryHarness]) {
  const h = mk();
  describe(`engine conformance: ${h.name}`, () => {
    let e: Engine;
    beforeEach(async () => {
      e = await h.open();
    });
    afterEach(async () => {
      await e.close();
      h.cleanup();
    });

    it('gets, puts and deletes, sync and async', async () => {
      expect(e.getSync(b('a'))).toBeUndefined();
      await e.put(b('a'), b('1'));
      await e.put(b('b'), b('2'), { sync: true });
      expect(e.getSync(b('a'))?.toString()).toBe('1');
      expect((await e.get(b('b')))?.toString()).toBe('2');
      await e.delete(b('a'));
      expect(e.getSync(b('a'))).toBeUndefined();
      expect(await e.get(b('a'))).toBeUndefined();
      await e.put(b('e'), Buffer.alloc(0));
      expect(e.getSync(b('e'))?.length).toBe(0);
      expect((await e.getMany([b('b'), b('a'), b('e')])).map((v) => v?.toString())).toEqual(['2', undefined, '']);
    });

    it('applies a batch atomically; the batch reads its own writes', async () => {
      await e.put(b('a'), b('old'));
      await e.put(b('z'), b('gone'));
      const batch = e.newBatch();
      batch.put(b('a'), b('new'));
      batch.put(b('c'), b('3'));
      batch.delete(b('z'));
      batch.put(b('d'), b('x'));
      batch.delete(b('d'));
      expect(batch.getSync(b('a'))?.toString()).toBe('new');
      expect(batch.getSync(b('z'))).toBeUndefined();
      expect(batch.getSync(b('d'))).toBeUndefined();
      expect((await batch.getMany([b('a'), b('z'), b('c'), b('q')])).map((v) => v?.toString())).toEqual(['new', undefined, '3', undefined]);
      expect(e.getSync(b('a'))?.toString()).toBe('old');
      expect(await scan(batch, {})).toEqual(['a=new', 'c=3']);
      expect(await scan(batch, { reverse: true }, 1)).toEqual(['c=3', 'a=new']);
      await e.write(batch, { sync: true });
      expect(await scan(e, {})).toEqual(['a=new', 'c=3']);
    });

    it('iterates forward and reverse within [gte, lt), in chunks', async () => {
      const batch = e.newBatch();
      for (const k of ['a', 'b', 'c', 'd', 'e', 'f']) batch.put(b(k), b(k.toUpperCase()));
      await e.write(batch);
      expect(await scan(e, { gte: b('b'), lt: b('e') })).toEqual(['b=B', 'c=C', 'd=D']);
      expect(await scan(e, { gte: b('b'), lt: b('e'), reverse: true })).toEqual(['d=D', 'c=C', 'b=B']);
      expect(await scan(e, { gte: b('bb'), lt: b('dd') }, 1)).toEqual(['c=C', 'd=D']);
      expect(await scan(e, { lt: b('c'), reverse: true })).toEqual(['b=B', 'a=A']);
      expect(await scan(e, { gte: b('x') })).toEqual([]);
      expect(await scan(e, {}, 100)).toHaveLength(6);
    });

    it('a forward iterator seeks within its bounds and its view, on the engine and a snapshot', async () => {
      const w = e.newBatch();
      for (const k of ['a', 'b', 'c', 'd', 'e', 'f', 'g']) w.put(b(k), b(k.toUpperCase()));
      await e.write(w);
      const snap = e.snapshot();
      for (const r of [e, snap] as Reader[]) {
        const it = r.iterator({ gte: b('b'), lt: b('f') });
        expect(it.seek).toBeDefined();
        await e.put(b('cc'), b('late')); // after the iterator's creation: not in its view
        expect((await it.nextBatch(1)).map((x) => x.key.toString())).toEqual(['b']);
        it.seek?.(b('cb'));
        expect((await it.nextBatch(1)).map((x) => x.key.toString())).toEqual(['d']);
        it.seek?.(b('a')); // below gte: from gte
        expect((await it.nextBatch(2)).map((x) => x.key.toString())).toEqual(['b', 'c']);
        it.seek?.(b('x')); // beyond lt: exhausted
        expect(await it.nextBatch(5)).toEqual([]);
        it.seek?.(b('e')); // after exhaustion: resumes
        expect((await it.nextBatch(5)).map((x) => x.key.toString())).toEqual(['e']);
        await it.close();
        it.seek?.(b('b')); // after close: nothing
        expect(await it.nextBatch(5)).toEqual([]);
        await e.delete(b('cc'));
      }
      await snap.close();
    });

    it('an iterator and a snapshot see the state as of their creation', async () => {
      await e.put(b('a'), b('1'));
      await e.put(b('b'), b('2'));
      const snap = e.snapshot();
      const it = e.iterator({});
      await e.put(b('a'), b('changed'));
      await e.delete(b('b'));
      await e.put(b('c'), b('new'));
      expect(snap.getSync(b('a'))?.toString()).toBe('1');
      expect(snap.getSync(b('b'))?.toString()).toBe('2');
      expect(snap.getSync(b('c'))).toBeUndefined();
      expect((await snap.getMany([b('a'), b('b'), b('c')])).map((v) => v?.toString())).toEqual(['1', '2', undefined]);
      expect(await drain(it)).toEqual(['a=1', 'b=2']);
      expect(await scan(snap, {})).toEqual(['a=1', 'b=2']);
      expect(await scan(snap, { reverse: true })).toEqual(['b=2', 'a=1']);
      await snap.close();
      expect(await scan(e, {})).toEqual(['a=changed', 'c=new']);
    });

    it('getMany of many keys (split over parallel reads by LevelEngine) aligns with getSync, on the engine, a snapshot and a batch', async () => {
      // Sizes around LevelEngine's split point (GETMANY_SPLIT_MIN = 32, four parts) and uneven parts.
      const w = e.newBatch();
      for (let i = 0; i < 150; i += 2) w.put(b(`k${String(i).padStart(3, '0')}`), b(`v${i}`));
      await e.write(w);
      const snap = e.snapshot();
      for (let i = 0; i < 150; i += 3) await e.delete(b(`k${String(i).padStart(3, '0')}`));
      const batch = e.newBatch();
      batch.put(b('k001'), b('pending'));
      for (const n of [0, 1, 31, 32, 33, 97, 150]) {
        // Keys in a scrambled order, present and absent, one repeated.
        const keys = Array.from({ length: n }, (_, i) => b(`k${String((i * 37) % 150).padStart(3, '0')}`));
        if (n > 2) keys[n - 1] = keys[0] as Buffer;
        for (const r of [e, snap, batch] as Reader[]) {
          const got = await r.getMany(keys);
          expect(got.length).toBe(n);
          expect(got.map((v) => v?.toString()), `${n} keys`).toEqual(keys.map((k) => r.getSync(k)?.toString()));
        }
      }
      await snap.close();
    });

    it('ships a batch as its repr and applies it elsewhere', async () => {
      const batch = e.newBatch();
      batch.put(b('k1'), b('v1'));
      batch.put(b('k\x002'), Buffer.from([0, 1, 2]));
      batch.delete(b('k3'));
      await e.put(b('k3'), b('doomed'));
      const repr = batch.repr();
      await e.applyBatchRepr(repr, { sync: true });
      expect(await scan(e, {})).toEqual([`k\x002=${Buffer.from([0, 1, 2]).toString()}`, 'k1=v1']);
    });

    it('reports the approximate size of a span', async () => {
      const batch = e.newBatch();
      for (let i = 0; i < 2000; i++) batch.put(b(`k${String(i).padStart(5, '0')}`), Buffer.alloc(1000, i));
      await e.write(batch);
      const size = await e.approximateSize(b('k'), b('l'));
      expect(size).toBeGreaterThanOrEqual(0);
      expect(await e.approximateSize(b('x'), b('y'))).toBe(0);
      if (h.name === 'MemoryEngine') expect(size).toBe(2000 * 1006);
    });

    it('rejects use after close', async () => {
      const e2 = await h.open();
      await e2.close();
      expect(() => e2.getSync(b('a'))).toThrow(/closed/);
    });

    it('matches a sorted-map model under random batches, snapshots and scans', async () => {
      const keyArb = fc.constantFrom(...'abcdefgh'.split('').map((c) => `${c}`), 'a\x00', 'b\xff');
      const opArb = fc.oneof(
        fc.record({ t: fc.constant('put' as const), k: keyArb, v: fc.string({ maxLength: 4 }) }),
        fc.record({ t: fc.constant('del' as const), k: keyArb }),
        fc.record({ t: fc.constant('scan' as const), lo: keyArb, hi: keyArb, rev: fc.boolean() }),
        fc.record({ t: fc.constant('commit' as const) }),
        fc.record({ t: fc.constant('snap' as const) }),
      );
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { maxLength: 30 }), async (ops) => {
          // A fresh key prefix per run keeps one engine reusable.
          const model = new Map<string, string>();
          const pending = new Map<string, string | null>();
          const batch = e.newBatch();
          for (const k of await scan(e, {})) await e.delete(b(k.split('=')[0] as string));
          let snap: { s: ReturnType<Engine['snapshot']>; m: Map<string, string> } | undefined;
          const view = (): Map<string, string> => {
            const v = new Map(model);
            for (const [k, x] of pending) if (x === null) v.delete(k);
            else v.set(k, x);
            return v;
          };
          const expectScan = (m: Map<string, string>, lo: string, hi: string, rev: boolean): string[] => {
            const keys = [...m.keys()].filter((k) => Buffer.compare(b(k), b(lo)) >= 0 && Buffer.compare(b(k), b(hi)) < 0).sort((x, y) => Buffer.compare(b(x), b(y)));
            if (rev) keys.reverse();
            return keys.map((k) => `${k}=${m.get(k)}`);
          };
          for (const op of ops) {
            if (op.t === 'put') {
              batch.put(b(op.k), b(op.v));
              pending.set(op.k, op.v);
            } else if (op.t === 'del') {
              batch.delete(b(op.k));
              pending.set(op.k, null);
            } else if (op.t === 'commit') {
              await e.write(batch);
              for (const [k, x] of pending) if (x === null) model.delete(k);
              else model.set(k, x);
              pending.clear();
              batch.clear();
            } else if (op.t === 'snap') {
              await snap?.s.close();
              snap = { s: e.snapshot(), m: new Map(model) };
            } else {
              expect(await scan(batch, { gte: b(op.lo), lt: b(op.hi), reverse: op.rev }, 2)).toEqual(expectScan(view(), op.lo, op.hi, op.rev));
              expect(await scan(e, { gte: b(op.lo), lt: b(op.hi), reverse: op.rev })).toEqual(expectScan(model, op.lo, op.hi, op.rev));
              if (snap !== undefined) expect(await scan(snap.s, { gte: b(op.lo), lt: b(op.hi), reverse: op.rev })).toEqual(expectScan(snap.m, op.lo, op.hi, op.rev));
              for (const [k, x] of view()) expect(batch.getSync(b(k))?.toString()).toBe(x);
            }
          }
          await snap?.s.close();
        }),
        { numRuns: 150 },
      );
    });
  });
}

describe('batch repr', () => {
  it('round-trips and rejects truncation and garbage with CorruptionError', () => {
    const ops = [
      { key: b('a'), value: b('1') },
      { key: b('b'), value: null },
      { key: Buffer.alloc(300, 7), value: Buffer.alloc(70000, 9) },
    ];
    const repr = encodeBatchRepr(ops);
    expect(decodeBatchRepr(repr)).toEqual(ops);
    for (const cut of [0, 1, 3, 5, repr.length - 1]) expect(() => decodeBatchRepr(repr.subarray(0, cut))).toThrow(CorruptionError);
    expect(() => decodeBatchRepr(Buffer.concat([repr, b('x')]))).toThrow(/trailing/);
    const bad = Buffer.from(repr);
    bad[4] = 9;
    expect(() => decodeBatchRepr(bad)).toThrow(/op kind/);
  });
});

describe('LevelEngine store lock', () => {
  it('fails with a clear message while another process holds the directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-lock-'));
    const script = `import { Level } from 'level';
const db = new Level(process.argv[1]); await db.open(); process.stdout.write('ready\\n');
process.stdin.on('data', async () => { await db.close(); process.exit(0); });`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script, dir], { cwd: process.cwd(), stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('child did not open the store in 20 s')), 20_000);
        child.stdout.on('data', (d: Buffer) => {
          if (d.toString().includes('ready')) {
            clearTimeout(timer);
            resolve();
          }
        });
        child.on('exit', (code) => reject(new Error(`child exited ${code}`)));
      });
      await expect(LevelEngine.open(dir)).rejects.toMatchObject({ code: 'storage.locked', message: expect.stringMatching(/in use by another process/) });
      const exited = new Promise((r) => child.on('exit', r));
      child.stdin.write('x');
      await exited;
      const e = await LevelEngine.open(dir);
      await e.close();
    } finally {
      child.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('LevelEngine synced writes', () => {
  it('read back after reopening, across memtable switches, with unsynced writes beside them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-sync-'));
    try {
      // A 64 KiB write buffer: LevelDB switches to a new WAL every ~15 of these 4 KB writes.
      let e = await LevelEngine.open(dir, { writeBufferSize: 64 << 10 });
      const val = (i: number): Buffer => Buffer.alloc(4096, i % 251);
      const key = (i: number): Buffer => Buffer.from(`k${String(i).padStart(5, '0')}`);
      for (let i = 0; i < 300; i++) {
        const b = e.newBatch();
        b.put(key(i), val(i));
        // An unsynced write beside every other synced one, as the store's applies are.
        if (i % 2 === 1) await Promise.all([e.write(b, { sync: true }), e.put(Buffer.from(`u${i}`), val(i))]);
        else await e.write(b, { sync: true });
      }
      expect(Number(readdirSync(dir).filter((n) => n.endsWith('.log'))[0]?.slice(0, -4)), 'LevelDB switched WALs many times').toBeGreaterThan(20);
      await e.delete(key(0), { sync: true });
      await e.close();
      e = await LevelEngine.open(dir);
      expect(e.getSync(key(0))).toBeUndefined();
      for (let i = 1; i < 300; i++) expect(e.getSync(key(i))?.equals(val(i)), `k${i}`).toBe(true);
      await e.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SkipList', () => {
  // Every list shares one module-wide search path and grows its head with its level (engine.ts): lists used in
  // turn, and lists growing past a few levels, must each still equal a sorted map, forwards and backwards.
  it('three lists interleaved agree with sorted maps: get, seekGE/seekLT, first/last, both directions (property)', () => {
    const keyArb = fc.uint8Array({ maxLength: 3 }).map((u) => Buffer.from(u));
    const opArb = fc.record({ list: fc.integer({ min: 0, max: 2 }), del: fc.boolean(), k: keyArb, v: fc.integer() });
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 200, maxLength: 400 }), keyArb, (ops, probe) => {
        const lists = [new SkipList<number>(), new SkipList<number>(), new SkipList<number>()];
        const models = [new Map<string, number>(), new Map<string, number>(), new Map<string, number>()];
        for (const op of ops) {
          const l = lists[op.list] as SkipList<number>;
          const m = models[op.list] as Map<string, number>;
          const hex = op.k.toString('hex');
          if (op.del) expect(l.delete(op.k)).toBe(m.delete(hex));
          else {
            l.set(op.k, op.v);
            m.set(hex, op.v);
          }
        }
        for (let i = 0; i < 3; i++) {
          const l = lists[i] as SkipList<number>;
          const want = [...(models[i] as Map<string, number>)].sort(([x], [y]) => Buffer.compare(Buffer.from(x, 'hex'), Buffer.from(y, 'hex'))).map(([k, v]) => `${k}=${v}`);
          const fwd: string[] = [];
          for (let n = l.first(); n !== null; n = n.next[0] ?? null) fwd.push(`${n.key.toString('hex')}=${n.value}`);
          const back: string[] = [];
          for (let n = l.last(); n !== null; n = n.prev) back.push(`${n.key.toString('hex')}=${n.value}`);
          expect(fwd).toEqual(want);
          expect(back).toEqual([...want].reverse());
          expect(l.size).toBe(want.length);
          const ge = want.find((e) => Buffer.compare(Buffer.from(e.split('=')[0] as string, 'hex'), probe) >= 0);
          const lt = [...want].reverse().find((e) => Buffer.compare(Buffer.from(e.split('=')[0] as string, 'hex'), probe) < 0);
          const show = (n: SkipNode<number> | null): string | undefined => (n === null ? undefined : `${n.key.toString('hex')}=${n.value}`);
          expect(show(l.seekGE(probe))).toBe(ge);
          expect(show(l.seekLT(probe))).toBe(lt);
          expect(show(l.get(probe))).toBe(models[i]?.has(probe.toString('hex')) ? ge : undefined);
        }
      }),
      // minLength: fast-check's default size keeps arrays near 10 elements whatever maxLength says, and lists
      // that short rarely grow past level 1 (with ~10 ops a head-growth bug went unseen).
      { numRuns: 150, seed: 20261201 },
    );
  });

  it('a batch that is never written to reads through, iterates the engine, and writes nothing', async () => {
    const e = new MemoryEngine();
    await e.put(b('a'), b('1'));
    const batch = e.newBatch();
    expect(batch.isEmpty()).toBe(true);
    expect(batch.count).toBe(0);
    expect(batch.ops()).toEqual([]);
    expect(batch.getSync(b('a'))?.toString()).toBe('1');
    expect(await batch.getMany([b('a'), b('z')])).toEqual([b('1'), undefined]);
    expect(await scan(batch, {})).toEqual(['a=1']);
    expect(decodeBatchRepr(batch.repr())).toEqual([]);
    await e.write(batch);
    batch.put(b('b'), b('2'));
    batch.clear();
    expect(batch.isEmpty()).toBe(true);
    await e.write(batch);
    expect(await scan(e, {})).toEqual(['a=1']);
  });
});

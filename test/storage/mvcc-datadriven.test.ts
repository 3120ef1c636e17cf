// Datadriven MVCC histories (issue 2; DESIGN.md §5.1): every transcript in
// storage/testdata/mvcc/ runs against the memory engine and against LevelDB,
// and both must print the same output. After every write the harness checks
// that the incrementally maintained stats equal a full recount.
//
// Verbs (ts=5 means wall 5 s; ts=5,1 adds logical 1; values print quoted):
//   txn_begin t=A ts=10 [epoch=0] [anchor=a]      a transaction named A
//   txn_step t=A [n=1]                            sequence += n
//   txn_advance t=A ts=12                         move the write/read timestamp
//   txn_update t=A [epoch=] [seq=] [ts=]          set fields directly
//   txn_restart t=A [ts=…]                        epoch += 1, sequence = 0
//   txn_ignore_seqs t=A seqs=(1-2,4-4)            rolled-back savepoints
//   put k=a v=1 [ts=5] [t=A]                      ts defaults to the txn's
//   del k=a [ts=5] [t=A]
//   cput k=a v=2 [exp=1] [ts=] [t=] [allow_missing]   no exp: expects absent
//   del_range k=a end=z [ts=] [t=] [max=N]
//   get k=a [ts=] [t=] [unc=ts] [inconsistent] [tombstones]
//   scan k=a end=z [ts=] [t=] [reverse] [max=N] [target_bytes=N] [unc=] [inconsistent] [tombstones]
//   resolve_intent t=A k=a status=committed|aborted|pending [ts=]
//   resolve_intent_range t=A k=a end=z status=… [ts=] [max=N]
//   gc k=(a,b) threshold=5 | gc_range k=a end=z threshold=5
//   corrupt k=a [ts=5] [truncate]                 damage the stored value
//   history_index_limit n=2                       versions a head indexes (the rest is its tail)
//   inline_value_limit n=2                        longer values are written out of line (n=inf: never)
//   stats                                         the span's stats (checked against a recount)
//   print                                         the engine contents, one line per engine key
import { describe, it, expect } from 'vitest';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runDataDriven, type TestCase } from '../support/datadriven.js';
import { MemoryEngine } from '../../storage/memory-engine.js';
import { LevelEngine } from '../../storage/level-engine.js';
import type { Engine } from '../../storage/engine.js';
import { decodeMvccKey, encodeMvccKey } from '../../storage/mvcc-key.js';
import { decodeHead, decodeVersion, prettyKey } from '../../storage/mvcc-value.js';
import {
  computeStats,
  emptyStats,
  mvccConditionalPut,
  mvccDelete,
  mvccDeleteRange,
  mvccGarbageCollect,
  mvccGarbageCollectRange,
  mvccGet,
  mvccPut,
  mvccResolveIntent,
  mvccResolveIntentRange,
  mvccScan,
  setHistoryIndexLimit,
  setInlineValueLimit,
  DEFAULT_INLINE_VALUE_LIMIT,
  type Intent,
  type MvccKeyValue,
  type MvccStats,
  type SeqRange,
  type Txn,
  type TxnStatus,
} from '../../storage/mvcc.js';
import { formatTimestamp, type Timestamp } from '../../src/util/hlc.js';
import { isCairnError } from '../../src/util/errors.js';

const testdata = join(import.meta.dirname, '../../storage/testdata/mvcc');
const KEY_MIN = Buffer.alloc(0);
const KEY_MAX = Buffer.from([0xff, 0xff]);

function parseTs(s: string): Timestamp {
  const [w, l] = s.split(',');
  return { wall: Math.round(Number(w) * 1e6), logical: Number(l ?? 0) };
}

/** Strips quotes and expands \\xNN escapes. */
function unquote(s: string): string {
  const t = s.length >= 2 && (s[0] === '"' || s[0] === "'") && s.endsWith(s[0]) ? s.slice(1, -1) : s;
  return t.replace(/\\x([0-9a-fA-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
}

const pv = (v: Buffer | null): string => (v === null ? '<tombstone>' : prettyKey(v));

class Harness {
  readonly txns = new Map<string, Txn>();
  readonly names = new Map<string, string>();
  stats: MvccStats = emptyStats();
  /** Set once a transcript corrupts a value: recounts would (rightly) fail. */
  corrupted = false;
  constructor(readonly engine: Engine) {}

  txnName(id: Buffer): string {
    return this.names.get(id.toString('hex')) ?? id.toString('hex');
  }

  txn(tc: TestCase): Txn | undefined {
    if (!tc.hasArg('t')) return undefined;
    const t = this.txns.get(tc.arg('t'));
    if (t === undefined) tc.fail(`unknown txn ${tc.arg('t')}`);
    return t;
  }

  setTxn(name: string, t: Txn): void {
    this.txns.set(name, t);
  }

  ts(tc: TestCase, key = 'ts'): Timestamp {
    if (tc.hasArg(key)) return parseTs(tc.arg(key));
    const t = this.txn(tc);
    if (t === undefined) tc.fail(`missing ${key}`);
    return t.writeTimestamp;
  }

  key(tc: TestCase, k = 'k'): Buffer {
    return Buffer.from(unquote(tc.arg(k)), 'latin1');
  }

  fmtKv(prefix: string, kv: MvccKeyValue): string {
    return `${prefix}: ${prettyKey(kv.key)} -> ${pv(kv.value)} @${formatTimestamp(kv.ts)}`;
  }

  fmtIntent(prefix: string, i: Intent): string {
    return `${prefix}: intent ${prettyKey(i.key)} ${this.txnName(i.txn.id)} ts=${formatTimestamp(i.txn.writeTimestamp)}`;
  }

  async write(fn: (b: ReturnType<Engine['newBatch']>, delta: MvccStats) => void | string | Promise<unknown>): Promise<string> {
    const batch = this.engine.newBatch();
    const delta = emptyStats();
    const out = await fn(batch, delta);
    await this.engine.write(batch, { sync: false });
    for (const k of Object.keys(delta) as (keyof MvccStats)[]) this.stats[k] += delta[k];
    if (this.corrupted) return typeof out === 'string' ? out : '';
    const recount = await computeStats(this.engine, KEY_MIN, KEY_MAX);
    expect(this.stats, 'incremental stats equal a recount').toEqual(recount);
    return typeof out === 'string' ? out : '';
  }

  async print(): Promise<string> {
    const lines: string[] = [];
    const it = this.engine.iterator({});
    for (;;) {
      const rows = await it.nextBatch(100);
      if (rows.length === 0) break;
      for (const { key, value } of rows) {
        const mk = decodeMvccKey(key);
        if (mk.ts !== undefined) {
          lines.push(`data: ${prettyKey(mk.key)}/${formatTimestamp(mk.ts)} -> ${pv(decodeVersion(key, value))}`);
          continue;
        }
        const h = decodeHead(key, value);
        const parts: string[] = [];
        if (h.intent !== null) {
          const t = h.intent.txn;
          parts.push(`intent ${this.txnName(t.id)} epoch=${t.epoch} ts=${formatTimestamp(t.writeTimestamp)} seq=${t.sequence} writes=[${h.intent.writes.map((w) => `${w.seq}:${pv(w.value)}`).join(' ')}]`);
        }
        const c = h.committed;
        if (c !== null) parts.push(`committed ${formatTimestamp(c.ts)} ${c.value === undefined ? `<out of line, ${c.len} bytes>` : pv(c.value)}`);
        if (h.history.length > 0) parts.push(`history=[${h.history.map((e) => formatTimestamp(e.ts)).join(' ')}]`);
        if (h.tail !== null) parts.push(`tail=${h.tail.count} versions/${h.tail.valBytes} bytes`);
        lines.push(`meta: ${prettyKey(mk.key)} -> ${parts.join('; ')}`);
      }
    }
    await it.close();
    return lines.length === 0 ? '<empty>' : lines.join('\n');
  }

  async run(tc: TestCase): Promise<string> {
    try {
      const out = await this.dispatch(tc);
      return out === '' ? 'ok' : out;
    } catch (e) {
      if (isCairnError(e)) return `error: (${e.name}) ${e.message}`;
      throw e;
    }
  }

  private readOpts(tc: TestCase): { txn?: Txn; uncertaintyLimit?: Timestamp; inconsistent?: boolean; tombstones?: boolean } {
    const o: { txn?: Txn; uncertaintyLimit?: Timestamp; inconsistent?: boolean; tombstones?: boolean } = {};
    const t = this.txn(tc);
    if (t !== undefined) o.txn = t;
    if (tc.hasArg('unc')) o.uncertaintyLimit = parseTs(tc.arg('unc'));
    if (tc.hasArg('inconsistent')) o.inconsistent = true;
    if (tc.hasArg('tombstones')) o.tombstones = true;
    return o;
  }

  private writeOpts(tc: TestCase, stats: MvccStats): { txn?: Txn; stats: MvccStats } {
    const t = this.txn(tc);
    return t === undefined ? { stats } : { txn: t, stats };
  }

  private async dispatch(tc: TestCase): Promise<string> {
    switch (tc.cmd) {
      case 'txn_begin': {
        const name = tc.arg('t');
        const id = Buffer.alloc(16);
        id.write(name, 'latin1');
        this.names.set(id.toString('hex'), name);
        this.setTxn(name, { id, epoch: tc.intArg('epoch', 0), writeTimestamp: parseTs(tc.arg('ts')), sequence: 0, key: Buffer.from(tc.arg('anchor', 'a')) });
        return '';
      }
      case 'txn_step': {
        const t = this.txn(tc) as Txn;
        this.setTxn(tc.arg('t'), { ...t, sequence: t.sequence + tc.intArg('n', 1) });
        return '';
      }
      case 'txn_update': {
        const t = this.txn(tc) as Txn;
        this.setTxn(tc.arg('t'), { ...t, epoch: tc.intArg('epoch', t.epoch), sequence: tc.intArg('seq', t.sequence), writeTimestamp: tc.hasArg('ts') ? parseTs(tc.arg('ts')) : t.writeTimestamp });
        return '';
      }
      case 'txn_advance': {
        const t = this.txn(tc) as Txn;
        this.setTxn(tc.arg('t'), { ...t, writeTimestamp: parseTs(tc.arg('ts')) });
        return '';
      }
      case 'txn_restart': {
        const t = this.txn(tc) as Txn;
        this.setTxn(tc.arg('t'), { ...t, epoch: t.epoch + 1, sequence: 0, ignoredSeqNums: [], writeTimestamp: tc.hasArg('ts') ? parseTs(tc.arg('ts')) : t.writeTimestamp });
        return '';
      }
      case 'txn_ignore_seqs': {
        const t = this.txn(tc) as Txn;
        const seqs: SeqRange[] = tc.args('seqs').map((s) => {
          const [a, b] = s.split('-');
          return { start: Number(a), end: Number(b ?? a) };
        });
        this.setTxn(tc.arg('t'), { ...t, ignoredSeqNums: seqs });
        return '';
      }
      case 'put':
        return this.write((b, d) => mvccPut(b, this.key(tc), this.ts(tc), Buffer.from(unquote(tc.arg('v')), 'latin1'), this.writeOpts(tc, d)));
      case 'del':
        return this.write((b, d) => mvccDelete(b, this.key(tc), this.ts(tc), this.writeOpts(tc, d)));
      case 'cput': {
        const exp = tc.hasArg('exp') ? Buffer.from(unquote(tc.arg('exp')), 'latin1') : null;
        const v = tc.hasArg('v') ? Buffer.from(unquote(tc.arg('v')), 'latin1') : null;
        return this.write((b, d) => mvccConditionalPut(b, this.key(tc), this.ts(tc), v, exp, { ...this.writeOpts(tc, d), allowIfDoesNotExist: tc.hasArg('allow_missing') }));
      }
      case 'del_range':
        return this.write(async (b, d) => {
          const r = await mvccDeleteRange(b, this.key(tc), this.key(tc, 'end'), this.ts(tc), { ...this.writeOpts(tc, d), max: tc.intArg('max', 0) });
          const lines = r.keys.map((k) => `del_range: ${prettyKey(k)}`);
          if (r.resumeSpan !== null) lines.push(`del_range: resume span [${prettyKey(r.resumeSpan.key)},${prettyKey(r.resumeSpan.endKey)})`);
          return lines.join('\n');
        });
      case 'get': {
        const r = await mvccGet(this.engine, this.key(tc), this.ts(tc), this.readOpts(tc));
        const lines: string[] = [];
        if (r.intent !== null) lines.push(this.fmtIntent('get', r.intent));
        lines.push(r.value === null ? `get: ${prettyKey(this.key(tc))} -> <no data>` : this.fmtKv('get', r.value));
        return lines.join('\n');
      }
      case 'scan': {
        const r = await mvccScan(this.engine, this.key(tc), this.key(tc, 'end'), this.ts(tc), {
          ...this.readOpts(tc),
          reverse: tc.hasArg('reverse'),
          maxKeys: tc.intArg('max', 0),
          targetBytes: tc.intArg('target_bytes', 0),
        });
        const lines = r.intents.map((i) => this.fmtIntent('scan', i));
        for (const kv of r.kvs) lines.push(this.fmtKv('scan', kv));
        if (r.kvs.length === 0) lines.push(`scan: ${prettyKey(this.key(tc))}-${prettyKey(this.key(tc, 'end'))} -> <no data>`);
        if (r.resumeSpan !== null) lines.push(`scan: resume span [${prettyKey(r.resumeSpan.key)},${prettyKey(r.resumeSpan.endKey)}) bytes=${r.numBytes}`);
        return lines.join('\n');
      }
      case 'resolve_intent':
      case 'resolve_intent_range': {
        const t = this.txn(tc) as Txn;
        const update = { txn: { ...t, writeTimestamp: this.ts(tc) }, status: tc.arg('status') as TxnStatus, ignoredSeqNums: t.ignoredSeqNums ?? [] };
        if (tc.cmd === 'resolve_intent') return this.write((b, d) => (mvccResolveIntent(b, this.key(tc), update, d) ? '' : 'resolve_intent: no intent'));
        return this.write(async (b, d) => {
          const r = await mvccResolveIntentRange(b, this.key(tc), this.key(tc, 'end'), update, { stats: d, max: tc.intArg('max', 0) });
          const lines = [`resolve_intent_range: resolved ${r.keys.map(prettyKey).join(' ')}`];
          if (r.resumeSpan !== null) lines.push(`resolve_intent_range: resume span [${prettyKey(r.resumeSpan.key)},${prettyKey(r.resumeSpan.endKey)})`);
          return lines.join('\n');
        });
      }
      case 'gc':
        return this.write(async (b, d) => `gc: removed ${await mvccGarbageCollect(b, tc.args('k').map((k) => Buffer.from(unquote(k), 'latin1')), parseTs(tc.arg('threshold')), d)}`);
      case 'inline_value_limit':
        setInlineValueLimit(tc.arg('n') === 'inf' ? Infinity : tc.intArg('n'));
        return '';
      case 'history_index_limit':
        setHistoryIndexLimit(tc.intArg('n'));
        return '';
      case 'gc_range':
        return this.write(async (b, d) => `gc: removed ${await mvccGarbageCollectRange(b, this.key(tc), this.key(tc, 'end'), parseTs(tc.arg('threshold')), d)}`);
      case 'corrupt': {
        const ek = tc.hasArg('ts') ? encodeMvccKey(this.key(tc), parseTs(tc.arg('ts'))) : encodeMvccKey(this.key(tc));
        const v = this.engine.getSync(ek);
        if (v === undefined) tc.fail('nothing to corrupt');
        const bad = tc.hasArg('truncate') ? Buffer.from(v.subarray(0, 3)) : Buffer.from(v);
        if (!tc.hasArg('truncate')) bad[bad.length - 1] = (bad[bad.length - 1] as number) ^ 0x40;
        await this.engine.put(ek, bad);
        this.corrupted = true;
        return '';
      }
      case 'stats': {
        const s = await computeStats(this.engine, KEY_MIN, KEY_MAX);
        expect(this.stats).toEqual(s);
        return Object.entries(s)
          .map(([k, v]) => `${k}=${v}`)
          .join(' ');
      }
      case 'print':
        return this.print();
      default:
        return tc.fail(`unknown command ${tc.cmd}`);
    }
  }
}

const files = readdirSync(testdata).filter((f) => f.endsWith('.txt'));

describe('MVCC histories (datadriven)', () => {
  for (const file of files) {
    it(`${file} on MemoryEngine`, async () => {
      setHistoryIndexLimit(16);
      setInlineValueLimit(DEFAULT_INLINE_VALUE_LIMIT);
      const h = new Harness(new MemoryEngine());
      await runDataDriven(join(testdata, file), (tc) => h.run(tc));
    });
    it(`${file} on LevelEngine`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'cairn-mvcc-dd-'));
      const engine = await LevelEngine.open(dir);
      setHistoryIndexLimit(16);
      setInlineValueLimit(DEFAULT_INLINE_VALUE_LIMIT);
      try {
        const h = new Harness(engine);
        // The memory run may have rewritten the file; this run must agree with it.
        const saved = process.env['REWRITE'];
        delete process.env['REWRITE'];
        try {
          await runDataDriven(join(testdata, file), (tc) => h.run(tc));
        } finally {
          if (saved !== undefined) process.env['REWRITE'] = saved;
        }
      } finally {
        await engine.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});

// History types and formats: pairing invocations with completions (indeterminate =
// pending forever), history.jsonl round trips, the EDN reader and the Jepsen log parser.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseEdn, parseEdnAll, ednToPlain } from '../../jepsen-style/history/edn.js';
import { parseEdnHistory, parseJepsenLog } from '../../jepsen-style/history/jepsen-formats.js';
import {
  buildHistory,
  formatHistoryJsonl,
  fromIndependent,
  pairHistory,
  parseHistoryJsonl,
  readHistoryFile,
  writeHistoryFile,
} from '../../jepsen-style/history/history.js';
import type { Op } from '../../jepsen-style/history/history.js';
import { AmbiguousResultError, CairnError, isCairnError } from '../../src/util/index.js';
import { HistoryRecorder } from '../../jepsen-style/history/recorder.js';
import { outcomeOfError } from '../../jepsen-style/history/outcome.js';
import { runTxn, type SqlConn, type WorkloadOptions } from '../../jepsen-style/workloads/workload.js';

describe('pairHistory', () => {
  it('pairs invocations with completions; info and missing completions are pending forever', () => {
    const h = buildHistory<unknown>([
      { process: 0, type: 'invoke', f: 'write', value: 1 },
      { process: 1, type: 'invoke', f: 'read', value: null },
      { process: 'nemesis', type: 'info', f: 'start', value: null },
      { process: 0, type: 'ok', f: 'write', value: 1 },
      { process: 1, type: 'info', f: 'read', value: null },
      { process: 2, type: 'invoke', f: 'write', value: 3 },
      { process: 3, type: 'invoke', f: 'cas', value: [1, 2] },
      { process: 3, type: 'fail', f: 'cas', value: [1, 2] },
    ]);
    const p = pairHistory(h);
    expect(p.map((o) => [o.process, o.type, o.invokeIndex, o.completeIndex])).toEqual([
      [0, 'ok', 0, 3],
      [1, 'info', 1, Infinity],
      [2, 'info', 5, Infinity],
      [3, 'fail', 6, 7],
    ]);
    expect(p[1]!.completion?.type).toBe('info');
    expect(p[2]!.completion).toBeUndefined();
  });

  it('takes an ok read value from the completion and an indeterminate one from the invocation', () => {
    const p = pairHistory(
      buildHistory([
        { process: 0, type: 'invoke', f: 'read', value: null },
        { process: 0, type: 'ok', f: 'read', value: 5 },
      ]),
    );
    expect(p[0]!.value).toBe(5);
  });

  it('rejects an ok completion without an invocation, and a mismatched f', () => {
    const err = (h: Op[]) => {
      try {
        pairHistory(h);
      } catch (e) {
        return isCairnError(e) ? e.code : 'other';
      }
      return 'none';
    };
    expect(err(buildHistory([{ process: 0, type: 'ok', f: 'read', value: 1 }]))).toBe('history.unpaired');
    expect(
      err(
        buildHistory([
          { process: 0, type: 'invoke', f: 'read', value: null },
          { process: 0, type: 'ok', f: 'write', value: 1 },
        ]),
      ),
    ).toBe('history.mismatched');
  });
});

describe('fromIndependent', () => {
  it("moves Jepsen's [key value] tuples into the key field", () => {
    const h = fromIndependent(
      buildHistory<unknown>([
        { process: 0, type: 'invoke', f: 'cas', value: ['k1', [1, 2]] },
        { process: 'nemesis', type: 'info', f: 'start', value: ['a', 'b'] },
      ]),
    );
    expect(h[0]).toMatchObject({ key: 'k1', value: [1, 2] });
    expect(h[1]!.key).toBeUndefined();
  });
});

describe('history.jsonl', () => {
  const op = fc.record({
    process: fc.oneof(fc.nat(50), fc.constant('nemesis')),
    type: fc.constantFrom('invoke', 'ok', 'fail', 'info'),
    f: fc.constantFrom('txn', 'read', 'write'),
    value: fc.jsonValue(),
  });

  it('round-trips any history', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 20 }), (ops) => {
        const h = buildHistory(ops as Parameters<typeof buildHistory>[0]);
        expect(parseHistoryJsonl(formatHistoryJsonl(h))).toEqual(JSON.parse(JSON.stringify(h)));
      }),
      { numRuns: 200 },
    );
  });

  it('writes and reads a file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-history-'));
    try {
      const h = buildHistory([{ process: 0, type: 'invoke', f: 'txn', value: [['append', 'x', 1]] }]);
      await writeHistoryFile(join(dir, 'history.jsonl'), h);
      expect(await readHistoryFile(join(dir, 'history.jsonl'))).toEqual(h);
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  it('rejects malformed lines with a typed error naming the line', () => {
    expect(() => parseHistoryJsonl('{"index":0,"time":0,"process":0,"type":"ok","f":"r","value":1}\n{oops')).toThrow(/line 2/);
    expect(() => parseHistoryJsonl('{"index":0,"time":0,"process":0,"type":"done","f":"r"}')).toThrow(/bad type/);
  });
});

describe('EDN reader', () => {
  it('reads the forms Jepsen histories use', () => {
    const v = parseEdn('[{:process 4, :type :invoke, :f :cas, :value [1 -2]} ; comment\n {:process :nemesis :value "a \\"b\\"" :x #{1} :y (nil true 2.5) :z #_ 7 8}]');
    expect(ednToPlain(v)).toEqual([
      { process: 4, type: 'invoke', f: 'cas', value: [1, -2] },
      { process: 'nemesis', value: 'a "b"', x: [1], y: [null, true, 2.5], z: 8 },
    ]);
    expect(parseEdnAll('1 2 :three')).toEqual([1, 2, 'three']);
  });

  it('rejects malformed input with history.edn_syntax', () => {
    for (const bad of ['[1 2', '{:a}', ')', '"abc', '[1] 2']) {
      expect(() => parseEdn(bad)).toThrow(/EDN/);
    }
  });
});

describe('Jepsen formats', () => {
  it('parses Jepsen log lines, ignoring other lines', () => {
    const h = parseJepsenLog(
      'INFO  jepsen.util - 2\t:invoke\t:cas\t[3 0]\nsome noise\nINFO  jepsen.util - 2\t:fail\t:cas\t[3 0]\nINFO  jepsen.util - 0\t:fail\t:read\t:timed-out\n',
    );
    expect(h.map((o) => [o.index, o.process, o.type, o.f, o.value])).toEqual([
      [0, 2, 'invoke', 'cas', [3, 0]],
      [1, 2, 'fail', 'cas', [3, 0]],
      [2, 0, 'fail', 'read', 'timed-out'],
    ]);
  });

  it('parses Knossos EDN histories, keeping times and nemesis events', () => {
    const h = parseEdnHistory('[{:process :nemesis :type :info :f :start :value nil}\n {:type :invoke, :f :write, :value 1, :process 7, :time 99}]');
    expect(h).toEqual([
      { index: 0, time: 0, process: 'nemesis', type: 'info', f: 'start', value: null },
      { index: 1, time: 99, process: 7, type: 'invoke', f: 'write', value: 1 },
    ]);
  });
});

describe('HistoryRecorder', () => {
  it('assigns index and injected time, streams jsonl, and pairs like a parsed history', () => {
    let t = 100;
    const lines: string[] = [];
    const rec = new HistoryRecorder({ now: () => (t += 5), sink: (l) => lines.push(l) });
    const a = rec.invoke(0, 'write', 1, 'k');
    const b = rec.invoke(1, 'read', null, 'k');
    rec.event('nemesis', 'partition', 'n1');
    rec.complete(b, 'ok', 1);
    rec.complete(a, 'info', 1, 'timeout');
    const h = rec.history();
    expect(h.map((o) => [o.index, o.time, o.type])).toEqual([
      [0, 105, 'invoke'],
      [1, 110, 'invoke'],
      [2, 115, 'info'],
      [3, 120, 'ok'],
      [4, 125, 'info'],
    ]);
    expect(parseHistoryJsonl(lines.join(''))).toEqual(h);
    expect(pairHistory(h).map((p) => [p.f, p.type, p.key])).toEqual([
      ['write', 'info', 'k'],
      ['read', 'ok', 'k'],
    ]);
    expect(h[4]!.error).toBe('timeout');
  });

  it('records a thrown error as fail only when it proves nothing happened', () => {
    const rec = new HistoryRecorder({ now: () => 0 });
    const a = rec.invoke(0, 'txn', [['append', 'x', 1]]);
    const b = rec.invoke(1, 'txn', [['append', 'x', 2]]);
    expect(rec.completeWithError(a, Object.assign(new Error('restart'), { code: '40001' }))).toMatchObject({ type: 'fail', error: '40001' });
    expect(rec.completeWithError(b, new Error('socket hang up'))).toMatchObject({ type: 'info', error: 'socket hang up' });
  });

  it('asserts one open operation per process', () => {
    const rec = new HistoryRecorder();
    rec.invoke(0, 'read', null);
    expect(() => rec.invoke(0, 'read', null)).toThrow(/open/);
  });
});

describe('outcomeOfError (DESIGN.md §6: unknown outcome → info, always)', () => {
  it('classifies SQLSTATEs and Cairn errors', () => {
    const pg = (code: string) => Object.assign(new Error('x'), { code });
    expect(outcomeOfError(pg('40003'))).toBe('info');
    expect(outcomeOfError(pg('40001'))).toBe('fail');
    expect(outcomeOfError(pg('23505'))).toBe('fail');
    expect(outcomeOfError(pg('08006'))).toBe('info');
    expect(outcomeOfError(pg('57014'))).toBe('info');
    expect(outcomeOfError(pg('57P03'))).toBe('fail'); // node starting: no session, nothing done
    expect(outcomeOfError(pg('57P01'))).toBe('info');
    expect(outcomeOfError(pg('ECONNRESET'))).toBe('info');
    expect(outcomeOfError(new Error('timeout'))).toBe('info');
    expect(outcomeOfError(new AmbiguousResultError('commit'))).toBe('info');
    expect(outcomeOfError(new CairnError('kv.retry', 'retry', { retryable: true }))).toBe('fail');
    expect(outcomeOfError(pg('08006'), { readOnly: true })).toBe('fail');
    expect(outcomeOfError(pg('08001'), { notSent: true })).toBe('fail');
  });
});

describe('runTxn records what an error was', () => {
  const failing = (e: Error): SqlConn => ({
    query: async (text) => {
      if (text.startsWith('BEGIN') || text === 'ROLLBACK') return { rows: [], rowCount: 0 };
      throw e;
    },
  });
  const pg = (code: string, message: string) => Object.assign(new Error(message), { code });
  const op = { f: 'transfer', value: 1 };
  const opts = { isolation: 'serializable' } as WorkloadOptions;

  it('keeps the message of internal (XX), system (58) and rollback (40) errors, the SQLSTATE alone otherwise', async () => {
    const run = (e: Error) => runTxn(failing(e), opts, op, false, async () => failing(e).query('UPDATE t SET v = 1'));
    expect(await run(pg('XX000', 'kv: something broke'))).toEqual({ type: 'fail', value: 1, error: 'XX000: kv: something broke' });
    expect(await run(pg('58000', 'server: n2 is not serving'))).toEqual({ type: 'fail', value: 1, error: '58000: server: n2 is not serving' });
    expect(await run(pg('40001', 'restart transaction'))).toEqual({ type: 'fail', value: 1, error: '40001: restart transaction' });
    expect(await run(pg('23505', 'duplicate key'))).toEqual({ type: 'fail', value: 1, error: '23505' });
    expect((await run(pg('XX000', 'y'.repeat(1000)))).error).toHaveLength('XX000: '.length + 300);
  });
});

// Transcripts of the list-append checker (STYLE.md §2): each directive is a small
// history and the checker's report, read by a person when rewritten (REWRITE=1).
//
//   elle [concurrent] [strict]
//   <process> <ok|fail|info> <micro-op>, <micro-op>, …     (micro-ops: `r x [1 2]`, `r x nil`, `append x 3`)
//
// Serial mode runs each txn alone in the given order (real-time order = line order);
// `concurrent` invokes every txn before any completes.
import { describe, it } from 'vitest';
import { join } from 'node:path';
import { checkElleAppend, formatElleResult } from '../../jepsen-style/checkers/elle-append.js';
import { runDataDriven } from '../support/datadriven.js';
import type { TestCase } from '../support/datadriven.js';
import { txnHistory } from './history-builder.js';

type Mop = readonly [string, string | number, unknown];

function parseMop(text: string): Mop {
  const m = /^(r|append)\s+(\S+)\s+(.*)$/.exec(text.trim());
  if (m === null) throw new Error(`bad micro-op: ${text}`);
  const [, f, key, rest] = m as unknown as [string, string, string, string];
  if (f === 'append') return ['append', key, Number(rest)];
  if (rest === 'nil') return ['r', key, null];
  const inner = rest.replace(/^\[|\]$/g, '').trim();
  return ['r', key, inner === '' ? [] : inner.split(/\s+/).map(Number)];
}

function elle(tc: TestCase): string {
  const txns = tc.input
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((line) => {
      const m = /^(\d+)\s+(ok|fail|info)\s+(.*)$/.exec(line.trim());
      if (m === null) throw new Error(`${tc.pos}: bad txn line: ${line}`);
      return [Number(m[1]), m[2] as 'ok' | 'fail' | 'info', m[3]!.split(',').map(parseMop)] as [number, 'ok' | 'fail' | 'info', Mop[]];
    });
  const r = checkElleAppend(txnHistory(txns, tc.hasArg('concurrent')), {
    consistencyModel: tc.hasArg('strict') ? 'strict-serializable' : 'serializable',
  });
  return `valid=${String(r.valid)} ${formatElleResult(r)}`;
}

describe('elle list-append transcripts', () => {
  it('testdata/elle-append.txt', async () => {
    await runDataDriven(join(import.meta.dirname, 'testdata', 'elle-append.txt'), (tc) => {
      if (tc.cmd !== 'elle') throw new Error(`${tc.pos}: unknown command ${tc.cmd}`);
      return elle(tc);
    });
  });
});

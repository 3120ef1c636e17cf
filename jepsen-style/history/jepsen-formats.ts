/**
 * Readers for histories recorded by Jepsen itself, used to test our checkers against
 * public histories with known verdicts (../shared/testdata/linearizability/):
 *
 *   - Knossos EDN files: a vector (or list) of op maps
 *       {:process 4, :type :invoke, :f :write, :value 2, :time 123}
 *     `:process :nemesis` entries are kept (isClientOp filters them); ops without
 *     `:time` get time = index.
 *   - Jepsen log lines, as in Porcupine's etcd histories:
 *       INFO  jepsen.util - <process>\t:<type>\t:<f>\t<value>
 *     where <value> is EDN (nil, 3, [3 0], :timed-out). Lines that do not match are
 *     ignored (logger noise). time = index.
 *
 * Both produce `Op`s (history.ts); `:timed-out` and other keywords stay as strings.
 */
import { CairnError } from '../../src/util/index.js';
import { ednToPlain, parseEdn, parseEdnAll } from './edn.js';
import type { Op, OpType } from './history.js';

const TYPES = new Set<string>(['invoke', 'ok', 'fail', 'info']);

function toOp(r: Record<string, unknown>, index: number): Op {
  const type = r['type'];
  if (typeof type !== 'string' || !TYPES.has(type)) {
    throw new CairnError('history.bad_op', `history: op ${index} has type ${String(type)}`);
  }
  const process = r['process'];
  const time = r['time'];
  return {
    index,
    time: typeof time === 'number' ? time : index,
    process: typeof process === 'number' ? process : String(process),
    type: type as OpType,
    f: String(r['f']),
    value: r['value'] ?? null,
    ...(r['error'] !== undefined && r['error'] !== null ? { error: String(r['error']) } : {}),
  };
}

/** Parses a Knossos/Jepsen EDN history: one vector of op maps, or op maps one per form. */
export function parseEdnHistory(text: string): Op[] {
  const forms = parseEdnAll(text);
  const items = forms.length === 1 && Array.isArray(forms[0]) ? forms[0] : forms;
  return items.map((f, i) => toOp(ednToPlain(f) as Record<string, unknown>, i));
}

const LOG_LINE = /jepsen\.util - (\S+)\t:(\w+)\t:([\w-]+)\t(.*)$/;

/** Parses Jepsen log lines (Porcupine's etcd format). */
export function parseJepsenLog(text: string): Op[] {
  const out: Op[] = [];
  for (const line of text.split('\n')) {
    const m = LOG_LINE.exec(line);
    if (m === null) continue;
    const [, proc, type, f, value] = m as unknown as [string, string, string, string, string];
    const n = Number(proc);
    out.push(
      toOp({ process: Number.isInteger(n) ? n : proc, type, f, value: ednToPlain(parseEdn(value)) }, out.length),
    );
  }
  return out;
}

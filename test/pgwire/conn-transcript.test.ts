// Protocol conversations as datadriven transcripts (testdata/*.txt): the
// extended-query rules of PostgreSQL docs §55.2.3 and the simple-query flow
// of §55.2.2, readable as the message sequences a client sees.
//
// Verbs:
//   connect                               a new trust connection as root (startup output not shown)
//   send                                  one frontend message per input line; prints the backend messages
//   state                                 whether the connection is closed, open sessions, retries made
//
// Input lines of `send` (values: bare words, "quoted strings" with \t \n \\ escapes, (a,b) lists, NULL):
//   Query sql="…"                         Parse [name=s] sql="…" [types=(23,…)]
//   Bind [portal=p] [stmt=s] [params=(…)] [binary]      Describe stmt=s | portal=p
//   Execute [portal=p] [rows=n]           Close stmt=s | portal=p
//   Sync  Flush  Terminate  CopyData data="…"  CopyDone  CopyFail message="…"
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { serialize } from 'pg-protocol';
import { runDataDriven, type TestCase } from '../support/datadriven.js';
import { started, type Harness } from './conn-harness.js';
import type { PeerMessage } from './pg-peer.js';

type Args = Map<string, string | string[] | null>;

function unescape(s: string): string {
  return s.replace(/\\(.)/g, (_, c: string) => (c === 't' ? '\t' : c === 'n' ? '\n' : c));
}

/** Parses `Kind key=value key="quoted" key=(a,b) flag`. */
function parseLine(line: string): { kind: string; args: Args } {
  const re = /(\w+)(?:=(?:"((?:[^"\\]|\\.)*)"|\(([^)]*)\)|(\S+)))?/g;
  const kindMatch = /^\s*(\w+)/.exec(line);
  if (!kindMatch) throw new Error(`transcript: cannot parse "${line}"`);
  const args: Args = new Map();
  re.lastIndex = kindMatch[0].length;
  for (let m = re.exec(line); m !== null; m = re.exec(line)) {
    const [, key, quoted, list, bare] = m;
    if (quoted !== undefined) args.set(key!, unescape(quoted));
    else if (list !== undefined) args.set(key!, list === '' ? [] : list.split(',').map((v) => v.trim()));
    else if (bare !== undefined) args.set(key!, bare);
    else args.set(key!, null);
  }
  return { kind: kindMatch[1]!, args };
}

function str(args: Args, key: string, dflt = ''): string {
  const v = args.get(key);
  return typeof v === 'string' ? v : dflt;
}

function frontendMessage(line: string): Buffer {
  const { kind, args } = parseLine(line);
  const target = (): { type: 'S' | 'P'; name: string } =>
    args.has('stmt') ? { type: 'S', name: str(args, 'stmt') } : { type: 'P', name: str(args, 'portal') };
  switch (kind) {
    case 'Query': return serialize.query(str(args, 'sql'));
    case 'Parse': return serialize.parse({ name: str(args, 'name'), text: str(args, 'sql'), types: ((args.get('types') as string[]) ?? []).map(Number) });
    case 'Bind': {
      const params = ((args.get('params') as string[]) ?? []).map((v) => (v === 'NULL' ? null : v));
      return serialize.bind({ portal: str(args, 'portal'), statement: str(args, 'stmt'), values: params, binary: args.has('binary') });
    }
    case 'Describe': return serialize.describe(target());
    case 'Execute': return serialize.execute({ portal: str(args, 'portal'), rows: Number(str(args, 'rows', '0')) });
    case 'Close': return serialize.close(target());
    case 'Sync': return serialize.sync();
    case 'Flush': return serialize.flush();
    case 'Terminate': return serialize.end();
    case 'CopyData': return serialize.copyData(Buffer.from(str(args, 'data')));
    case 'CopyDone': return serialize.copyDone();
    case 'CopyFail': return serialize.copyFail(str(args, 'message'));
    default: throw new Error(`transcript: unknown frontend message ${kind}`);
  }
}

/** One line per backend message, compactly. */
function show(m: PeerMessage): string {
  const quote = (v: unknown) => (v === null ? 'NULL' : JSON.stringify(v));
  switch (m.name) {
    case 'rowDescription':
      return `RowDescription ${(m['fields'] as { name: string; dataTypeID: number; format: string }[]).map((f) => `${f.name}:${f.dataTypeID}${f.format === 'binary' ? '/b' : ''}`).join(' ')}`;
    case 'dataRow': return `DataRow ${(m['fields'] as unknown[]).map(quote).join(' ')}`;
    case 'commandComplete': return `CommandComplete ${m['text']}`;
    case 'readyForQuery': return `ReadyForQuery ${m['status']}`;
    case 'parameterDescription': return `ParameterDescription (${(m['dataTypeIDs'] as number[]).join(',')})`;
    case 'parameterStatus': return `ParameterStatus ${m['parameterName']}=${m['parameterValue']}`;
    case 'error':
    case 'notice': {
      const extra = ['detail', 'hint', 'position'].filter((k) => m[k] !== undefined).map((k) => ` ${k}=${quote(m[k])}`).join('');
      return `${m.name === 'error' ? 'ErrorResponse' : 'NoticeResponse'} ${m['severity']} ${m['code']} ${quote(m['message'])}${extra}`;
    }
    case 'copyInResponse':
    case 'copyOutResponse': return `${m.name === 'copyInResponse' ? 'CopyInResponse' : 'CopyOutResponse'} ${(m['columnTypes'] as number[]).length} columns`;
    case 'copyData': return `CopyData ${quote(String(m['chunk']))}`;
    case 'emptyQuery': return 'EmptyQueryResponse';
    default: return m.name.charAt(0).toUpperCase() + m.name.slice(1);
  }
}

/** Long runs of DataRows show their first three and a count. */
function elideRows(lines: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < lines.length; ) {
    let j = i;
    while (j < lines.length && lines[j]!.startsWith('DataRow ')) j++;
    if (j - i > 6) {
      out.push(...lines.slice(i, i + 3), `… ${j - i - 3} more DataRows`);
      i = j;
    } else {
      out.push(lines[i]!);
      i++;
    }
  }
  return out;
}

async function runTranscript(file: string): Promise<void> {
  let h: Harness | undefined;
  await runDataDriven(join(import.meta.dirname, 'testdata', file), async (tc: TestCase) => {
    switch (tc.cmd) {
      case 'connect':
        h = await started({ insecure: true });
        return 'ok';
      case 'send': {
        if (!h) tc.fail('connect first');
        const msgs = await h.send(...tc.input.split('\n').filter((l) => l.trim() !== '').map(frontendMessage));
        return msgs.length === 0 ? '(nothing)' : elideRows(msgs.map(show)).join('\n');
      }
      case 'state':
        if (!h) tc.fail('connect first');
        await h.conn.whenIdle();
        expect(h.factory.contractViolations).toEqual([]);
        return `closed=${h.transport.closed} open-sessions=${h.factory.openSessions} transparent-retries=${h.factory.retries}`;
      default:
        return tc.fail('unknown verb');
    }
  });
}

describe('pgwire transcripts', () => {
  for (const file of ['simple-query.txt', 'extended-query.txt', 'copy.txt']) {
    it(file, () => runTranscript(file));
  }
});

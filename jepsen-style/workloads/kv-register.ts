/**
 * kv-register: the register workload through Cairn's admin KV endpoint instead of SQL —
 * single-key reads and blind writes, each its own KV batch routed by the node the client
 * talks to (`POST /_admin/kv`). It tests what lies below SQL (ranges, Raft, leases, HLC,
 * routing) for linearizability while a build has no SQL layer mounted; no CAS (the
 * endpoint has none), so the model is the read/write register.
 *
 * kv-register-n1-reads: the same, except that the clients of n1 only read — with the
 * partition-leaseholder nemesis (which first moves the lease to n1, then cuts n1 off),
 * n1's gateway keeps routing its reads to its own replica, which still holds the old
 * lease; a build that serves reads on an expired lease (the expired-lease-reads canary)
 * answers them from its stale state while the majority writes newer values. (A client
 * of n1 that wrote would be refused with NotLeaseHolder and its gateway would route
 * everything to the majority from then on.)
 *
 * Keys: `0xfe "jepsen/register/" <k>` (above every table's data), values the decimal
 * text of a small integer, both hex-encoded on the wire.
 * Outcomes: {ok:true} → ok; {ok:false, ambiguous:false} → fail (the KV layer knows it
 * did not apply); an HTTP error whose body is a typed `server.*` refusal → fail (the
 * request was refused before any op ran); ambiguous, another HTTP error or a timeout →
 * info for writes, fail for reads (a read changes nothing).
 */
import { linearizableChecker, register } from '../checkers/index.js';
import { RegisterGenerator } from './register.js';
import type { OpRequest, OpResult, Workload } from './workload.js';

function keyHex(k: number): string {
  return Buffer.concat([Buffer.from([0xfe]), Buffer.from(`jepsen/register/${k}`)]).toString('hex');
}

interface KvResult {
  readonly ok: boolean;
  readonly value?: string | null;
  readonly code?: string;
  readonly ambiguous?: boolean;
}

async function executeKv(httpUrl: string, op: OpRequest, timeoutMs: number): Promise<OpResult> {
  const read = op.f === 'read';
  const key = keyHex(op.key as number);
  const body = read ? { op: 'get', key } : { op: 'put', key, value: Buffer.from(String(op.value)).toString('hex') };
  let r: KvResult;
  try {
    const res = await fetch(`${httpUrl}/_admin/kv`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ops: [body] }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    if (!res.ok) {
      // A typed refusal of the whole request (e.g. server.not_serving) comes before any op
      // ran: certainly not applied. Anything else (a proxy, a crash mid-request) is unknown.
      const refused = /^\{"code":"server\./.test(text);
      return { type: read || refused ? 'fail' : 'info', value: op.value, error: `http ${res.status}: ${text.slice(0, 160)}` };
    }
    r = (JSON.parse(text) as { results: KvResult[] }).results[0]!;
  } catch (e) {
    return { type: read ? 'fail' : 'info', value: op.value, error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  }
  if (!r.ok) return { type: read || r.ambiguous !== true ? 'fail' : 'info', value: op.value, error: r.code ?? 'kv error' };
  if (!read) return { type: 'ok', value: op.value };
  return { type: 'ok', value: r.value === null || r.value === undefined ? null : Number(Buffer.from(r.value, 'hex').toString()) };
}

export const kvRegisterWorkload: Workload = {
  name: 'kv-register',
  tables: [],
  transport: 'admin-kv',
  async setup(): Promise<void> {},
  generator: (prng) => new RegisterGenerator(prng, false),
  execute(): Promise<OpResult> {
    throw new Error('kv-register: executes through executeKv');
  },
  executeKv,
  finalOps: () => [],
  checkers: () => [linearizableChecker(register, { deadlineMs: 120_000 })],
};

export const kvRegisterN1ReadsWorkload: Workload = {
  ...kvRegisterWorkload,
  name: 'kv-register-n1-reads',
  generator: (prng, _concurrency, nodes) => new RegisterGenerator(prng, false, (w) => w % nodes === 0),
};

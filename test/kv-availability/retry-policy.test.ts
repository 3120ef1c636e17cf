/**
 * The DistSender's rules after a replica stops answering (dist-sender.ts
 * header), deterministic: the NodeDialer — the DistSender's injected I/O
 * boundary — is scripted per node and throws the RPC layer's own errors
 * (src/rpc/errors.ts). One range [KEY_MIN, KEY_MAX) on n1..n3, n1 cached as
 * its leaseholder.
 *
 *   batch                     n1 lost after sending       then
 *   read-only                 next replica                 final error never ambiguous
 *   txn write, no EndTxn      next replica                 final error ambiguous
 *   txn commit (EndTxn)       ambiguous, not retried
 *   non-txn write             ambiguous, not retried
 *
 * Breakers: a call unanswered past probeAfterMs whose probe fails is
 * abandoned (AbortSignal) and its node skipped until a background probe
 * succeeds.
 */
import { describe, it, expect } from 'vitest';
import { DistSender } from '../../src/kv/dist-sender.js';
import { NotLeaseHolderError, type BatchHeader, type BatchRequest, type BatchResponse, type Lease, type RangeDescriptor, type ReplicaDescriptor, type Request } from '../../src/kv/api.js';
import type { NodeDialer } from '../../src/kv/kv-client.js';
import { abandonedCallError, connectionLostError, unavailableError, unknownMethodError } from '../../src/rpc/errors.js';
import { CairnError } from '../../src/util/errors.js';
import { KEY_MAX, KEY_MIN } from '../../storage/keys.js';

const ZERO = { wall: 0, logical: 0 };
const rep = (n: number): ReplicaDescriptor => ({ nodeId: n, storeId: n, replicaId: n, type: 0 });
const DESC: RangeDescriptor = { rangeId: 1, startKey: KEY_MIN, endKey: KEY_MAX, replicas: [rep(1), rep(2), rep(3)], nextReplicaId: 4, generation: 1 };
const LEASE_N1: Lease = { replica: rep(1), start: ZERO, expiration: { wall: 1e18, logical: 0 }, sequence: 1 };
const TXN = {} as NonNullable<BatchHeader['txn']>; // only its presence matters to the DistSender
const key = Buffer.from('\x90k', 'latin1');
const OK: BatchResponse = { now: ZERO, timestamp: ZERO, responses: [{ kind: 'get', value: null, ts: ZERO }] };

type Behaviour = 'ok' | 'lost' | 'unavailable' | 'nlh' | 'hang' | 'starting';

/** A NodeDialer whose answer per node is scripted; records the calls. */
class ScriptedDialer implements NodeDialer {
  readonly calls: number[] = [];
  constructor(readonly script: Record<number, Behaviour>) {}
  send(nodeId: number, _ba: BatchRequest, opts?: { readonly signal?: AbortSignal }): Promise<BatchResponse> {
    this.calls.push(nodeId);
    switch (this.script[nodeId]) {
      case 'ok':
        return Promise.resolve(OK);
      case 'lost':
        return Promise.reject(connectionLostError(`n${nodeId}`, 1, 'peer gone'));
      case 'nlh':
        return Promise.reject(new NotLeaseHolderError(1, LEASE_N1, null));
      case 'starting': // a restarted node accepts connections before its store registers the KV methods
        return Promise.reject(unknownMethodError(nodeId, 100));
      case 'hang':
        return new Promise((_, reject) => opts?.signal?.addEventListener('abort', () => reject(abandonedCallError('rpc.canceled', `n${nodeId}`, 1, true))));
      default:
        return Promise.reject(unavailableError(`n${nodeId}`, 'dial failed'));
    }
  }
}

function sender(script: Record<number, Behaviour>, extra: Partial<ConstructorParameters<typeof DistSender>[1]> = {}): { ds: DistSender; dialer: ScriptedDialer } {
  const dialer = new ScriptedDialer(script);
  const ds = new DistSender(dialer, { nodes: () => [1, 2, 3], maxAttempts: 3, sleep: () => Promise.resolve(), ...extra });
  ds.cache.insert(DESC);
  ds.cache.setLeaseholder(1, rep(1));
  return { ds, dialer };
}

const batch = (requests: Request[], txn = false): BatchRequest => ({ header: { rangeId: 0, timestamp: ZERO, ...(txn ? { txn: TXN } : {}) }, requests });
const get: Request = { kind: 'get', key };
const put: Request = { kind: 'put', key, value: Buffer.from('v') };
const endTxn = { kind: 'endTxn', key, commit: true, inFlightWrites: [], lockSpans: [] } as unknown as Request;

async function failure(p: Promise<unknown>): Promise<CairnError> {
  const e = await p.then(
    () => null,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(CairnError);
  return e as CairnError;
}

describe('after a replica stops answering', () => {
  it('a read-only batch goes to the next replica, and the leaseholder entry is dropped', async () => {
    const { ds, dialer } = sender({ 1: 'lost', 2: 'ok', 3: 'ok' });
    expect(await ds.send(batch([get]))).toBe(OK);
    expect(dialer.calls).toEqual([1, 2]);
    expect(ds.cache.leaseholder(1)?.nodeId).toBe(2);
  });

  it('a read-only batch that nobody serves fails retryable, never ambiguous', async () => {
    const { ds } = sender({ 1: 'lost', 2: 'unavailable', 3: 'nlh' });
    const e = await failure(ds.send(batch([get], true)));
    expect(e.ambiguous).toBe(false);
    expect(e.retryable).toBe(true);
  });

  it('a transactional write is retried elsewhere; if that fails too, the error is ambiguous', async () => {
    const ok = sender({ 1: 'lost', 2: 'ok', 3: 'ok' });
    expect(await ok.ds.send(batch([put], true))).toBe(OK);
    expect(ok.dialer.calls).toEqual([1, 2]);
    const bad = sender({ 1: 'lost', 2: 'nlh', 3: 'nlh' });
    const e = await failure(bad.ds.send(batch([put], true)));
    expect(e.ambiguous).toBe(true);
    expect(e.code).toBe('kv.ambiguous_result');
    expect(e.sqlState).toBe('40003');
    expect(bad.dialer.calls).toEqual([1, 2, 3]); // no re-division after an ambiguous send
  });

  it('a node without the Batch handler yet (restarting) is skipped for every kind of batch: the request never ran', async () => {
    for (const b of [batch([get]), batch([put], true), batch([put, endTxn], true), batch([put])]) {
      const { ds, dialer } = sender({ 1: 'starting', 2: 'ok', 3: 'ok' });
      expect(await ds.send(b)).toBe(OK);
      expect(dialer.calls).toEqual([1, 2]);
    }
    const e = await failure(sender({ 1: 'starting', 2: 'starting', 3: 'starting' }).ds.send(batch([put, endTxn], true)));
    expect([e.retryable, e.ambiguous]).toEqual([true, false]);
  });

  it('a commit and a non-transactional write are ambiguous at once, not retried', async () => {
    for (const [b, what] of [
      [batch([put, endTxn], true), 'commit'],
      [batch([put]), 'non-txn put'],
    ] as const) {
      const { ds, dialer } = sender({ 1: 'lost', 2: 'ok', 3: 'ok' });
      const e = await failure(ds.send(b));
      expect(e.ambiguous, what).toBe(true);
      expect(e.code, what).toBe('rpc.connection_lost');
      expect(dialer.calls, what).toEqual([1]);
      expect(ds.cache.leaseholder(1), what).toBeUndefined(); // the next request starts elsewhere
    }
  });
});

describe('breakers', () => {
  it('abandon a call whose node fails its probe, skip the node, and close when a probe succeeds', async () => {
    let reachable = false;
    const probes: number[] = [];
    const { ds, dialer } = sender(
      { 1: 'hang', 2: 'ok', 3: 'ok' },
      {
        probe: (n) => {
          probes.push(n);
          return reachable ? Promise.resolve() : Promise.reject(new Error('probe timed out'));
        },
        probeAfterMs: 20,
        breakerMs: 10_000,
      },
    );
    expect(await ds.send(batch([get]))).toBe(OK);
    expect(dialer.calls).toEqual([1, 2]);
    expect(ds.metrics.abandoned).toBe(1);
    expect(ds.isOpen(1)).toBe(true);
    // n1 is tried last and skipped without a send while its breaker is open.
    ds.cache.setLeaseholder(1, rep(1));
    dialer.script[2] = 'unavailable';
    dialer.calls.length = 0;
    expect(await ds.send(batch([get]))).toBe(OK);
    expect(dialer.calls).toEqual([2, 3]);
    // A put gets NotLeaseHolder(n1) from n2 and n3: n1 is still skipped (never sent), and the
    // descriptor is kept (only lease hints: no meta2 lookup, which this test's dialer cannot serve).
    dialer.script[2] = 'nlh';
    dialer.script[3] = 'nlh';
    dialer.calls.length = 0;
    const e = await failure(ds.send(batch([put])));
    expect(e.code).toBe('kv.not_lease_holder');
    expect(dialer.calls.includes(1)).toBe(false);
    expect(ds.metrics.breakerSkips).toBeGreaterThan(0);
    // The background probe closes the breaker once n1 answers.
    reachable = true;
    const deadline = performance.now() + 5_000;
    while (ds.isOpen(1) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(ds.isOpen(1)).toBe(false);
    expect(probes.length).toBeGreaterThanOrEqual(2);
  });

  it('concurrent calls to one silent node share one probe', async () => {
    const probes: number[] = [];
    const { ds } = sender(
      { 1: 'hang', 2: 'ok', 3: 'ok' },
      {
        probe: (n) => {
          probes.push(n);
          return new Promise((_, reject) => setTimeout(() => reject(new Error('probe timed out')), 30));
        },
        probeAfterMs: 20,
      },
    );
    const got = await Promise.all([1, 2, 3, 4].map(() => ds.send(batch([get]))));
    expect(got).toEqual([OK, OK, OK, OK]);
    expect(ds.metrics.abandoned).toBe(4);
    expect(probes).toEqual([1]);
  });
});

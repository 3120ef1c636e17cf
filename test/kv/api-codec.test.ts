/**
 * Round trips of the KV codec (api-codec.ts): batches, responses, errors,
 * Raft message batches, Raft commands, snapshot chunks and state records;
 * truncated encodings are rejected, never decoded into garbage.
 */
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { AmbiguousResultError, CairnError } from '../../src/util/errors.js';
import { ConditionFailedError, WriteIntentError, WriteTooOldError } from '../../storage/mvcc.js';
import { MessageType, newMessage, type Message } from '../../raft/types.js';
import * as codec from '../../src/kv/api-codec.js';
import { NotLeaseHolderError, RangeKeyMismatchError, type BatchRequest, type Lease, type RangeDescriptor, type Request } from '../../src/kv/api.js';

const buf = fc.uint8Array({ maxLength: 24 }).map((a) => Buffer.from(a));
const ts = fc.record({ wall: fc.nat({ max: 2 ** 52 }), logical: fc.nat({ max: 0xffffffff }) });
const id = fc.integer({ min: 1, max: 1_000_000 });
const replica = fc.record({ nodeId: id, storeId: id, replicaId: id, type: fc.constantFrom(0 as const, 1 as const) });
const lease: fc.Arbitrary<Lease> = fc.record({ replica, start: ts, expiration: ts, sequence: fc.nat() });
const desc: fc.Arbitrary<RangeDescriptor> = fc.record({ rangeId: id, startKey: buf, endKey: buf, replicas: fc.array(replica, { maxLength: 5 }), nextReplicaId: id, generation: fc.nat() });
const request: fc.Arbitrary<Request> = fc.oneof(
  fc.record({ kind: fc.constant('get' as const), key: buf }),
  fc.record({ kind: fc.constant('put' as const), key: buf, value: buf }),
  fc.record({ kind: fc.constant('cput' as const), key: buf, value: fc.option(buf), expected: fc.option(buf), allowIfDoesNotExist: fc.boolean() }),
  fc.record({ kind: fc.constant('delete' as const), key: buf }),
  fc.record({ kind: fc.constant('deleteRange' as const), key: buf, endKey: buf, returnKeys: fc.boolean() }),
  fc.record({ kind: fc.constantFrom('scan' as const, 'reverseScan' as const), key: buf, endKey: buf, maxKeys: fc.nat() }),
  fc.record({ kind: fc.constantFrom('requestLease' as const, 'transferLease' as const), lease, prevLease: fc.option(lease) }),
  fc.record({ kind: fc.constant('leaseInfo' as const) }),
  fc.record({ kind: fc.constant('computeChecksum' as const), checksumId: fc.nat() }),
  fc.record({ kind: fc.constant('truncateLog' as const), index: fc.nat() }),
);
const txn = fc.record({ id: fc.uint8Array({ minLength: 16, maxLength: 16 }).map((a) => Buffer.from(a)), epoch: fc.nat(), writeTimestamp: ts, sequence: fc.nat(), key: buf });
const observedTimestamps = fc.array(fc.record({ nodeId: id, timestamp: ts }), { minLength: 1, maxLength: 5 });
const batch: fc.Arbitrary<BatchRequest> = fc.record({
  header: fc.oneof(
    fc.record({ rangeId: id, replicaId: fc.nat(), timestamp: ts }),
    fc.record({ rangeId: id, replicaId: fc.nat(), timestamp: ts, txn }),
    // Observed timestamps (uncertainty.ts; flags bit 1), with and without async consensus (bit 0).
    fc.record({ rangeId: id, replicaId: fc.nat(), timestamp: ts, txn, uncertaintyLimit: ts, observedTimestamps }),
    fc.record({ rangeId: id, replicaId: fc.nat(), timestamp: ts, txn, asyncConsensus: fc.constant(true), observedTimestamps }),
  ),
  requests: fc.array(request, { maxLength: 6 }),
});

function errOf(r: codec.BatchResult): CairnError {
  if (r.ok) throw new Error('expected an error result');
  return r.error;
}

function expectTruncationsRejected(enc: Buffer, decode: (b: Buffer) => unknown): void {
  for (let n = 0; n < enc.length; n++) expect(() => decode(enc.subarray(0, n))).toThrow(CairnError);
}

describe('api-codec', () => {
  it('round-trips batch requests, and rejects every truncation', () => {
    fc.assert(
      fc.property(batch, (ba) => {
        const enc = codec.encodeBatchRequest(ba);
        expect(codec.decodeBatchRequest(enc)).toEqual(ba);
        expectTruncationsRejected(enc, codec.decodeBatchRequest);
      }),
      { numRuns: 300 },
    );
  });

  it('round-trips responses', () => {
    const res = {
      now: { wall: 5, logical: 1 },
      timestamp: { wall: 4, logical: 0 },
      responses: [
        { kind: 'get' as const, value: Buffer.from('v'), ts: { wall: 3, logical: 2 } },
        { kind: 'put' as const },
        { kind: 'scan' as const, rows: [{ key: Buffer.from('a'), value: Buffer.from('1') }], resumeKey: Buffer.from('b'), resumeEndKey: Buffer.from('z') },
        { kind: 'deleteRange' as const, keys: [Buffer.from('k')] },
        { kind: 'leaseInfo' as const, lease: null },
      ],
    };
    const enc = codec.encodeBatchResult({ ok: true, response: res });
    expect(codec.decodeBatchResult(enc)).toEqual({ ok: true, response: res });
    expectTruncationsRejected(enc, codec.decodeBatchResult);
    // A transactional batch's response carries the serving node's observed timestamp (uncertainty.ts).
    const withObs = { ...res, observedTimestamps: [{ nodeId: 3, timestamp: { wall: 7, logical: 2 } }] };
    const enc2 = codec.encodeBatchResult({ ok: true, response: withObs });
    expect(codec.decodeBatchResult(enc2)).toEqual({ ok: true, response: withObs });
    expectTruncationsRejected(enc2, codec.decodeBatchResult);
  });

  it('golden bytes: a header with observed timestamps, and a response with one (design note in api-codec.ts)', () => {
    const ba: BatchRequest = {
      header: { rangeId: 2, replicaId: 0, timestamp: { wall: 9, logical: 0 }, uncertaintyLimit: { wall: 12, logical: 0 }, observedTimestamps: [{ nodeId: 1, timestamp: { wall: 10, logical: 1 } }, { nodeId: 3, timestamp: { wall: 11, logical: 0 } }] },
      requests: [],
    };
    // rangeId replicaId ts(9,0) opt-txn:0 opt-limit:1 (12,0) flags:2 nObs:2 (1 (10,1)) (3 (11,0)) n:0
    expect(codec.encodeBatchRequest(ba).toString('hex')).toBe('020009000001' + '0c00' + '02' + '02' + '010a01' + '030b00' + '00');
    expect(codec.decodeBatchRequest(codec.encodeBatchRequest(ba))).toEqual(ba);
    // An empty list is never encoded with the flag set: the decoder refuses it.
    expect(() => codec.decodeBatchRequest(Buffer.from('020009000000' + '02' + '00' + '00', 'hex'))).toThrow(CairnError);
    const res = { now: { wall: 5, logical: 0 }, timestamp: { wall: 4, logical: 0 }, responses: [], observedTimestamps: [{ nodeId: 2, timestamp: { wall: 3, logical: 0 } }] };
    // ok:0 now(5,0) ts(4,0) nObs:1 (2 (3,0)) n:0
    expect(codec.encodeBatchResult({ ok: true, response: res }).toString('hex')).toBe('00' + '0500' + '0400' + '01' + '020300' + '00');
    // No observation: nObs 0, and the decoded response has no observedTimestamps field.
    expect(codec.decodeBatchResult(Buffer.from('00' + '0500' + '0400' + '00' + '00', 'hex'))).toStrictEqual({ ok: true, response: { now: { wall: 5, logical: 0 }, timestamp: { wall: 4, logical: 0 }, responses: [] } });
  });

  it('round-trips KV errors with their hints and classification', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1000 }), fc.option(lease), fc.option(replica), fc.array(desc, { maxLength: 3 }), (rangeId, l, hint, descs) => {
        const nlhe = codec.decodeBatchResult(codec.encodeBatchResult({ ok: false, error: new NotLeaseHolderError(rangeId, l, hint) }));
        expect(nlhe.ok).toBe(false);
        const e = errOf(nlhe) as NotLeaseHolderError;
        expect(e).toBeInstanceOf(NotLeaseHolderError);
        expect([e.rangeId, e.lease, e.hint, e.retryable]).toEqual([rangeId, l, hint, true]);
        const rkm = codec.decodeBatchResult(codec.encodeBatchResult({ ok: false, error: new RangeKeyMismatchError(Buffer.from('k'), null, descs) }));
        expect((errOf(rkm) as RangeKeyMismatchError).descriptors).toEqual(descs);
      }),
      { numRuns: 100 },
    );
    const errs: CairnError[] = [
      new AmbiguousResultError('lease lost'),
      new WriteIntentError([{ key: Buffer.from('a'), txn: { id: Buffer.alloc(16, 7), epoch: 1, writeTimestamp: { wall: 9, logical: 0 }, sequence: 3, key: Buffer.from('a') } }]),
      new WriteTooOldError(Buffer.from('k'), { wall: 1, logical: 0 }, { wall: 2, logical: 1 }),
      new ConditionFailedError(Buffer.from('k'), null),
      new CairnError('x.y', 'x: something', { retryable: true, sqlState: '40001' }),
    ];
    for (const err of errs) {
      const back = codec.decodeBatchResult(codec.encodeBatchResult({ ok: false, error: err }));
      const got = errOf(back);
      expect(got.constructor).toBe(err.constructor === CairnError ? got.constructor : err.constructor);
      expect([got.code, got.message, got.retryable, got.ambiguous, got.sqlState]).toEqual([err.code, err.message, err.retryable, err.ambiguous, err.sqlState]);
    }
  });

  it('round-trips Raft message batches (entries, snapshots, contexts)', () => {
    const entry = fc.record({ term: fc.nat(), index: fc.nat(), type: fc.constantFrom(0, 1), data: fc.uint8Array({ maxLength: 16 }).map((a) => Buffer.from(a)) });
    const ids = fc.array(id, { maxLength: 4 });
    const msg: fc.Arbitrary<Message> = fc
      .record({
        type: fc.integer({ min: 0, max: 18 }),
        to: id,
        from: id,
        term: fc.nat(),
        logTerm: fc.nat(),
        index: fc.nat(),
        entries: fc.array(entry, { maxLength: 4 }),
        commit: fc.nat(),
        snapshot: fc.option(fc.record({ data: buf, metadata: fc.record({ index: fc.nat(), term: fc.nat(), confState: fc.record({ voters: ids, learners: ids, votersOutgoing: ids, learnersNext: ids, autoLeave: fc.boolean() }) }) })),
        reject: fc.boolean(),
        rejectHint: fc.nat(),
        context: fc.option(buf),
      })
      .map((m) => newMessage(m as Message));
    const mb = fc.record({
      fromNodeId: id,
      fromStoreId: id,
      toStoreId: id,
      messages: fc.array(fc.record({ rangeId: id, fromReplicaId: id, toReplicaId: id, quiesce: fc.boolean(), message: msg }), { maxLength: 4 }),
    });
    fc.assert(
      fc.property(mb, (b) => {
        const enc = codec.encodeRaftMessageBatch(b);
        expect(codec.decodeRaftMessageBatch(enc)).toEqual(b);
        expectTruncationsRejected(enc, codec.decodeRaftMessageBatch);
      }),
      { numRuns: 200 },
    );
    expect(codec.decodeRaftMessageBatch(codec.encodeRaftMessageBatch({ fromNodeId: 1, fromStoreId: 1, toStoreId: 2, messages: [{ rangeId: 1, fromReplicaId: 1, toReplicaId: 2, quiesce: false, message: newMessage({ type: MessageType.MsgHeartbeat, to: 2, from: 1, commit: 7 }) }] })).messages[0]?.message.commit).toBe(7);
  });

  it('round-trips Raft commands, snapshot chunks and state records', () => {
    const stats = fc.record({ liveBytes: fc.integer({ min: -1e6, max: 1e6 }), liveCount: fc.integer(), keyBytes: fc.integer(), keyCount: fc.integer(), valBytes: fc.integer(), valCount: fc.integer(), intentBytes: fc.integer(), intentCount: fc.integer() });
    fc.assert(
      fc.property(
        fc.record({ cmdId: id, leaseSeq: fc.nat(), maxLeaseIndex: fc.nat(), isLeaseRequest: fc.boolean(), prevLease: fc.option(lease), repr: buf, stats, sideEffects: fc.record({ newLease: lease, truncatedState: fc.record({ index: fc.nat(), term: fc.nat() }), checksumId: fc.nat(), priorReadSummary: ts }, { requiredKeys: [] }) }),
        (c) => {
          const enc = codec.encodeRaftCommand(c);
          expect(codec.decodeRaftCommand(enc)).toEqual(c);
          expectTruncationsRejected(enc, codec.decodeRaftCommand);
        },
      ),
      { numRuns: 200 },
    );
    fc.assert(
      fc.property(desc, lease, stats, (d, l, s) => {
        expect(codec.decodeRangeDescriptor(codec.encodeRangeDescriptor(d))).toEqual(d);
        expect(codec.decodeLease(codec.encodeLease(l))).toEqual(l);
        const as = { raftAppliedIndex: 5, raftAppliedTerm: 2, leaseAppliedIndex: 4, stats: s };
        expect(codec.decodeAppliedState(codec.encodeAppliedState(as))).toEqual(as);
      }),
      { numRuns: 100 },
    );
    const chunk = { rangeId: 3, snapId: 9, fromNodeId: 1, toStoreId: 2, kvs: [{ key: Buffer.from('a'), value: Buffer.from('b') }], final: null };
    expect(codec.decodeSnapshotChunk(codec.encodeSnapshotChunk(chunk))).toEqual(chunk);
    expect(codec.decodeHardState(codec.encodeHardState({ term: 3, vote: 2, commit: 9 }))).toEqual({ term: 3, vote: 2, commit: 9 });
    expect(codec.decodeStoreIdent(codec.encodeStoreIdent({ clusterId: 'c', nodeId: 1, storeId: 1 }))).toEqual({ clusterId: 'c', nodeId: 1, storeId: 1 });
    const e = { term: 4, index: 11, type: 0, data: Buffer.from('xyz') };
    expect(codec.decodeRaftEntry(11, codec.encodeRaftEntry(e))).toEqual(e);
  });
});

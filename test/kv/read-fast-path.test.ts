/**
 * The synchronous read path of the Batch RPC handler (Store.sendReadsFast →
 * Replica.sendReadsFast → serveReadsFast): a batch of point reads the
 * leaseholder can serve at once is answered without a promise per layer; any
 * other batch gets null with nothing served, and the full path
 * (send(ba, true)) resumes after it. What is checked here is the contract the
 * handler relies on, on a 3-node in-process cluster:
 *  - a transactional point read on the leaseholder is answered at once, with
 *    the value and the node's arrival reading as its observed timestamp (as
 *    Store.send answers: uncertainty.ts);
 *  - the same batch on a follower, and a write batch on the leaseholder, get
 *    null and nothing is served (the write is not applied until send(ba, true));
 *  - the fast read is recorded in the timestamp cache: a later write below its
 *    timestamp is pushed above it (DESIGN.md §3, "Transactions"), and the read
 *    value is still what a read at that timestamp sees;
 *  - through the node's Batch RPC handler, a point read comes back as bytes
 *    (synchronously), a write as a promise.
 */
import { describe, expect, it } from 'vitest';
import { tsLess, tsLessEq, ZERO_TIMESTAMP } from '../../src/util/hlc.js';
import { KvMethod, type BatchRequest, type GetResponse } from '../../src/kv/api.js';
import { decodeBatchResult, encodeBatchRequest } from '../../src/kv/api-codec.js';
import type { Txn } from '../../storage/mvcc.js';
import { compareBytes } from '../../storage/encoding/bytes.js';
import { autoCloseClusters } from '../support/test-cluster.js';
import { descriptors } from '../kv-ranges/support.js';
import { startTxnCluster, tkey } from '../kv-txn/support.js';

const start = autoCloseClusters();

describe('Store.sendReadsFast (the Batch handler\'s synchronous reads)', () => {
  it('answers a leaseholder point read at once, null elsewhere, and records the read', async () => {
    // Leases of 30 s: an idle range's lease must not lapse under the test on a loaded machine (the default here is 1 s).
    const { c, ds } = await startTxnCluster(start, { settings: { leaseDurationMicros: 30_000_000 } });
    const K = tkey(1);
    const K2 = tkey(2);
    await ds[0]?.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'put', key: K, value: Buffer.from('v1') }] });
    const d = descriptors(c).find((x) => compareBytes(x.startKey, K) <= 0 && compareBytes(K, x.endKey) < 0);
    if (d === undefined) throw new Error('no range');
    await c.waitFor(() => c.leaseholder(d.rangeId) >= 0, 10_000, `a leaseholder of r${d.rangeId}`);
    const lh = c.leaseholder(d.rangeId);
    const follower = (lh + 1) % 3;

    const readTs = c.node(lh).clock.now();
    const txn: Txn = { id: Buffer.alloc(16, 7), epoch: 0, writeTimestamp: readTs, minTimestamp: readTs, sequence: 0, key: K };
    const read: BatchRequest = { header: { rangeId: d.rangeId, timestamp: readTs, txn, uncertaintyLimit: readTs }, requests: [{ kind: 'get', key: K }] };

    expect(c.store(follower).sendReadsFast(read)).toBeNull();
    const res = c.store(lh).sendReadsFast(read);
    expect(res).not.toBeNull();
    if (res === null) return;
    expect((res.responses[0] as GetResponse).value?.toString()).toBe('v1');
    expect(res.timestamp).toEqual(readTs);
    expect(res.observedTimestamps?.length).toBe(1);
    const obs = res.observedTimestamps?.[0];
    expect(obs?.nodeId).toBe(lh + 1);
    expect(tsLessEq(readTs, obs?.timestamp ?? ZERO_TIMESTAMP) && tsLessEq(obs?.timestamp ?? ZERO_TIMESTAMP, res.now)).toBe(true);

    // A write is not served here, and nothing of it is applied until the full path runs.
    const below = { wall: readTs.wall - 1000, logical: 0 };
    const put: BatchRequest = { header: { rangeId: d.rangeId, timestamp: below }, requests: [{ kind: 'put', key: K, value: Buffer.from('v2') }] };
    expect(c.store(lh).sendReadsFast(put)).toBeNull();
    const get2: BatchRequest = { header: { rangeId: d.rangeId, timestamp: readTs }, requests: [{ kind: 'get', key: K2 }, { kind: 'get', key: K }] };
    const before = c.store(lh).sendReadsFast(get2);
    expect((before?.responses[1] as GetResponse | undefined)?.value?.toString()).toBe('v1');

    // The write lands above the fast read (the timestamp cache knew it), so the read's value stays what it read.
    const wrote = await c.store(lh).send(put, true);
    expect(tsLess(readTs, wrote.timestamp)).toBe(true);
    const again = await c.store(lh).send({ header: { rangeId: d.rangeId, timestamp: readTs }, requests: [{ kind: 'get', key: K }] });
    expect((again.responses[0] as GetResponse).value?.toString()).toBe('v1');
    const now = await c.store(lh).send({ header: { rangeId: d.rangeId, timestamp: c.node(lh).clock.now() }, requests: [{ kind: 'get', key: K }] });
    expect((now.responses[0] as GetResponse).value?.toString()).toBe('v2');

    // Through the node's Batch RPC handler: the read is answered synchronously (bytes, not a promise), a write is not.
    const handler = c.node(lh).rpc?.handler(KvMethod.Batch);
    if (handler === undefined) throw new Error('no Batch handler');
    const meta = { peerId: 1, method: KvMethod.Batch, ts: c.node(lh).clock.now() };
    const answered = handler(encodeBatchRequest({ header: { rangeId: d.rangeId, timestamp: c.node(lh).clock.now() }, requests: [{ kind: 'get', key: K }] }), meta);
    expect(answered instanceof Promise).toBe(false);
    const decoded = decodeBatchResult(answered as Uint8Array);
    expect(decoded.ok && (decoded.response.responses[0] as GetResponse).value?.toString()).toBe('v2');
    const written = handler(encodeBatchRequest({ header: { rangeId: d.rangeId, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'put', key: K2, value: Buffer.from('w') }] }), meta);
    expect(written instanceof Promise).toBe(true);
    expect(decodeBatchResult((await written) as Uint8Array).ok).toBe(true);
  });
});

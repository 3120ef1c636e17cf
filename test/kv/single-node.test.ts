/**
 * A single-node store with one range (r1 = the whole keyspace): the request
 * path end to end over real RPC — lease acquisition by the only replica (its
 * own leader), puts/gets/cput/delete/scan/deleteRange, errors as values
 * (ConditionFailedError, RangeNotFound), and a restart from a LevelDB
 * directory that keeps every acknowledged write.
 */
import { describe, it, expect } from 'vitest';
import { ConditionFailedError } from '../../storage/mvcc.js';
import { RangeNotFoundError, type Request } from '../../src/kv/api.js';
import { PREFETCH_MIN_POINT_WRITES } from '../../src/kv/replica.js';
import { RpcNodeDialer } from '../../src/kv/kv-client.js';
import { autoCloseClusters } from '../support/test-cluster.js';

const k = (s: string): Buffer => Buffer.from(`\x90${s}`, 'latin1');
const v = (s: string): Buffer => Buffer.from(s);

const startCluster = autoCloseClusters();

describe('single-node store', () => {
  it('serves the KV API from one replica', async () => {
    const c = await startCluster({ nodes: 1 });
    c.startTicker();
    const kv = c.client(0);
    await kv.put(k('a'), v('1'));
    await kv.put(k('b'), v('2'));
    await kv.put(k('c'), v('3'));
    expect((await kv.get(k('a')))?.toString()).toBe('1');
    expect(await kv.get(k('zz'))).toBeNull();
    await kv.cput(k('a'), v('10'), v('1'));
    await expect(kv.cput(k('a'), v('11'), v('1'))).rejects.toBeInstanceOf(ConditionFailedError);
    await kv.delete(k('b'));
    expect((await kv.scan(k(''), k('\xff'))).map((r) => [r.key.toString('latin1').slice(1), r.value.toString()])).toEqual([
      ['a', '10'],
      ['c', '3'],
    ]);
    expect(await kv.deleteRange(k(''), k('\xff'))).toBe(2);
    expect(await kv.scan(k(''), k('\xff'))).toEqual([]);
    expect(c.leaseholder(1)).toBe(0);
    const dialer = new RpcNodeDialer(c.node(0).rpc!);
    await expect(dialer.send(1, { header: { rangeId: 99, timestamp: { wall: 0, logical: 0 } }, requests: [{ kind: 'get', key: k('a') }] })).rejects.toBeInstanceOf(RangeNotFoundError);
  });

  it('stops serving while its clock is out of bounds (DESIGN.md §6)', async () => {
    const c = await startCluster({ nodes: 1 });
    c.startTicker();
    const kv = c.client(0);
    await kv.put(k('x'), v('1'));
    c.node(0).clockUnhealthy = true;
    const dialer = new RpcNodeDialer(c.node(0).rpc!);
    await expect(dialer.send(1, { header: { rangeId: 1, timestamp: { wall: 0, logical: 0 } }, requests: [{ kind: 'get', key: k('x') }] })).rejects.toMatchObject({ code: 'kv.clock_unhealthy', retryable: true });
    c.node(0).clockUnhealthy = false;
    expect((await kv.get(k('x')))?.toString()).toBe('1');
  });

  it('evaluates a batch of point writes with its MVCC heads prefetched (replica.ts PREFETCH_MIN_POINT_WRITES) as it would one by one', async () => {
    const c = await startCluster({ nodes: 1, engine: 'level' });
    c.startTicker();
    const kv = c.client(0);
    const n = PREFETCH_MIN_POINT_WRITES + 24; // enough for LevelEngine to split the getMany too
    const key = (i: number): Buffer => k(`p${String(i).padStart(3, '0')}`);
    for (let i = 0; i < n; i += 2) await kv.put(key(i), v(`old${i}`));
    const dialer = new RpcNodeDialer(c.node(0).rpc!);
    const zero = { wall: 0, logical: 0 };
    // Every cput's condition is checked against its prefetched head: present keys expect their old value, absent ones nothing.
    const cputs = (bad: number): Request[] =>
      Array.from({ length: n }, (_, i) => ({ kind: 'cput', key: key(i), value: v(`new${i}`), expected: i % 2 === 0 && i !== bad ? v(`old${i}`) : null, allowIfDoesNotExist: false }) as const);
    // One wrong expectation fails the whole batch: nothing of it is written.
    await expect(dialer.send(1, { header: { rangeId: 1, timestamp: zero }, requests: cputs(10) })).rejects.toBeInstanceOf(ConditionFailedError);
    expect((await kv.get(key(0)))?.toString()).toBe('old0');
    expect(await kv.get(key(1))).toBeNull();
    const res = await dialer.send(1, { header: { rangeId: 1, timestamp: zero }, requests: cputs(-1) });
    expect(res.responses).toHaveLength(n);
    const mixed: Request[] = Array.from({ length: n }, (_, i) => (i % 3 === 0 ? { kind: 'delete', key: key(i) } : { kind: 'put', key: key(i), value: v(`again${i}`) }));
    await dialer.send(1, { header: { rangeId: 1, timestamp: zero }, requests: mixed });
    const rows = await kv.scan(key(0), key(n));
    expect(rows.map((r) => r.value.toString())).toEqual(Array.from({ length: n }, (_, i) => i).filter((i) => i % 3 !== 0).map((i) => `again${i}`));
  });

  it('keeps acknowledged writes across a restart on LevelDB', async () => {
    const c = await startCluster({ nodes: 1, engine: 'level' });
    c.startTicker();
    const kv = c.client(0);
    await Promise.all(Array.from({ length: 200 }, (_, i) => kv.put(k(`key${String(i).padStart(4, '0')}`), v(`val${i}`))));
    await c.stopNode(0);
    await c.restartNode(0);
    const rows = await c.client(0).scan(k(''), k('\xff'));
    expect(rows.length).toBe(200);
    expect(rows[7]?.value.toString()).toBe('val7');
  });
});

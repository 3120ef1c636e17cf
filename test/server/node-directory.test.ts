/**
 * The node directory's merge rules (src/server/node-directory.ts): per node
 * id the entry with the later start wins, a node never takes another's word
 * about its own id, and the RPC layer hears about every new or moved
 * address — checked against a simple reference (last-started-wins map) over
 * random gossip sequences.
 */
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { NodeDirectory, type NodeDescriptor } from '../../src/server/node-directory.js';

const desc = (nodeId: number, port: number, startedAtMicros: number): NodeDescriptor => ({
  nodeId,
  clusterId: 'c',
  instanceId: `i${nodeId}-${startedAtMicros}`,
  rpcAddr: `127.0.0.1:${port}`,
  sqlAddr: '',
  httpAddr: '',
  startedAtMicros,
});

describe('NodeDirectory', () => {
  it('keeps the latest start per node, ignores its own id, reports address changes', () => {
    const seen: string[] = [];
    const d = new NodeDirectory(
      () => 1,
      (id, a) => seen.push(`n${id}@${a.port}`),
    );
    expect(d.merge(desc(2, 1002, 10))).toBe(true);
    expect(d.merge(desc(2, 1003, 5))).toBe(false); // older incarnation
    expect(d.merge(desc(2, 1004, 20))).toBe(true); // restarted on another port
    expect(d.merge(desc(1, 9999, 99))).toBe(false); // our own id: never from others
    expect(d.merge({ ...desc(0, 1, 1) })).toBe(false);
    expect(d.address(2)).toEqual({ host: '127.0.0.1', port: 1004 });
    expect(d.address(1)).toBeUndefined();
    expect(seen).toEqual(['n2@1002', 'n2@1004']);
    d.setSelf(desc(1, 1001, 1));
    expect(d.nodeIds()).toEqual([1, 2]);
  });

  it('agrees with a last-started-wins reference over random gossip (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1000, max: 1010 }), fc.integer({ min: 0, max: 50 })), { maxLength: 60 }), (entries) => {
        const changes = new Map<number, number>();
        const d = new NodeDirectory(
          () => 3,
          (id, a) => changes.set(id, a.port),
        );
        const ref = new Map<number, NodeDescriptor>();
        for (const [id, port, t] of entries) {
          const e = desc(id, port, t);
          d.merge(e);
          if (id !== 3 && (ref.get(id)?.startedAtMicros ?? -1) < t) ref.set(id, e);
        }
        expect(d.all()).toEqual([...ref.values()].sort((a, b) => a.nodeId - b.nodeId));
        for (const [id, e] of ref) expect(changes.get(id)).toBe(Number(e.rpcAddr.split(':')[1]));
      }),
    );
  });
});

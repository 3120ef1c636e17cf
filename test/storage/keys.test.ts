// The keyspace (storage/keys.ts), issue 2 "Foundation", DESIGN.md §3 "Keys":
// pretty-printer table, ordering invariants, per-range contiguity, decoders, meta2 addressing.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
// node:assert inside the many-run properties: the same checks as expect(), at a fraction of the cost.
import assert from 'node:assert/strict';
import {
  BOOTSTRAP_VERSION_KEY,
  CLUSTER_ID_KEY,
  DESC_ID_GENERATOR_KEY,
  KEY_MAX,
  KEY_MIN,
  LOCAL_MAX,
  META2_MAX,
  META2_PREFIX,
  NODE_ID_GENERATOR_KEY,
  NODE_LIVENESS_SPAN,
  RANGE_ID_GENERATOR_KEY,
  STORE_ID_GENERATOR_KEY,
  STORE_IDENT_KEY,
  SYSTEM_MAX,
  SYSTEM_PREFIX,
  TABLE_DATA_MIN,
  abortSpanKey,
  addressOf,
  appendTableIndexPrefix,
  clusterSettingKey,
  decodeAbortSpanKey,
  decodeMeta2Key,
  decodeNodeLivenessKey,
  decodeRaftLogKey,
  decodeRangeIdLocalKey,
  decodeTableIndexPrefix,
  decodeTransactionKey,
  descriptorKey,
  isLocal,
  isValidSplitKey,
  meta2Key,
  meta2LookupKey,
  namespaceKey,
  nodeLivenessKey,
  prettyEngineKey,
  prettyKey,
  prettySpan,
  raftHardStateKey,
  raftLogKey,
  raftLogPrefix,
  raftLogSpan,
  raftReplicaIdKey,
  raftTruncatedStateKey,
  rangeTombstoneKey,
  rangeAppliedStateKey,
  rangeDescriptorKey,
  rangeGCThresholdKey,
  rangeIdReplicatedSpan,
  rangeIdSpan,
  rangeIdUnreplicatedSpan,
  rangeLeaseKey,
  rangeLocalSpan,
  replicatedSpans,
  tableIndexPrefix,
  tableIndexSpan,
  tableKey,
  tablePrefix,
  tableSpan,
  transactionKey,
} from '../../storage/keys.js';
import type { Span } from '../../storage/keys.js';
import { KeyWriter, compareBytes, encodeTuple, prefixEnd } from '../../storage/encoding/index.js';
import { encodeMvccKey } from '../../storage/mvcc-key.js';
import { CairnError, CorruptionError } from '../../src/util/errors.js';

const TXN = Buffer.from('0123456789abcdef0123456789abcdef', 'hex');
const TXN_STR = '01234567-89ab-cdef-0123-456789abcdef';

function rowKey(tableId: number, indexId: number, build: (w: KeyWriter) => void = () => {}): Buffer {
  const w = new KeyWriter();
  appendTableIndexPrefix(w, tableId, indexId);
  build(w);
  return w.finish();
}

const inSpan = (k: Buffer, s: Span): boolean => compareBytes(k, s.key) >= 0 && compareBytes(k, s.endKey) < 0;

describe('prettyKey', () => {
  const userRow = rowKey(52, 1, (w) => w.appendString('user42'));
  const cases: [string, Buffer, string][] = [
    ['min', KEY_MIN, '/Min'],
    ['max', KEY_MAX, '/Max'],
    ['table prefix', tablePrefix(52), '/Table/52'],
    ['index prefix', tableIndexPrefix(52, 1), '/Table/52/1'],
    ['row', rowKey(52, 1, (w) => w.appendString('user42').appendInt(7).appendNull()), '/Table/52/1/"user42"/7/NULL'],
    [
      'every column kind, both directions',
      rowKey(300, 2, (w) =>
        w.appendInt(-5, 'desc').appendFloat(1, 'asc').appendFloat(-0.25, 'desc').appendBool(false).appendBytes(Buffer.from([0, 0x41, 0xff])).appendString('q"\\\n', 'desc').appendNull('desc'),
      ),
      '/Table/300/2/-5/1.0/-0.25/false/b"\\x00A\\xff"/"q\\"\\\\\\x0a"/NULL',
    ],
    ['float specials', rowKey(53, 1, (w) => w.appendFloat(NaN).appendFloat(Infinity).appendFloat(-Infinity).appendFloat(1e300)), '/Table/53/1/NaN/+Inf/-Inf/1e+300'],
    ['big ints', rowKey(53, 1, (w) => w.appendInt(-(2n ** 63n)).appendInt(2n ** 63n - 1n)), '/Table/53/1/-9223372036854775808/9223372036854775807'],
    ['undecodable tail', Buffer.concat([tableIndexPrefix(52, 1), Buffer.from('14616263', 'hex')]), '/Table/52/1/?0x14616263'],
    ['unknown tag in a row', Buffer.concat([tableIndexPrefix(52, 1), Buffer.from('1699', 'hex')]), '/Table/52/1/?0x1699'],
    ['raft log', raftLogKey(5, 123), '/Local/RangeID/5/u/RaftLog/123'],
    ['raft hard state', raftHardStateKey(5), '/Local/RangeID/5/u/RaftHardState'],
    ['raft truncated state', raftTruncatedStateKey(1000), '/Local/RangeID/1000/u/RaftTruncatedState'],
    ['raft replica id', raftReplicaIdKey(5), '/Local/RangeID/5/u/RaftReplicaID'],
    ['range tombstone', rangeTombstoneKey(5), '/Local/RangeID/5/u/RangeTombstone'],
    ['applied state', rangeAppliedStateKey(5), '/Local/RangeID/5/r/RangeAppliedState'],
    ['lease', rangeLeaseKey(5), '/Local/RangeID/5/r/RangeLease'],
    ['gc threshold', rangeGCThresholdKey(5), '/Local/RangeID/5/r/RangeGCThreshold'],
    ['abort span', abortSpanKey(5, TXN), `/Local/RangeID/5/r/AbortSpan/${TXN_STR}`],
    ['range descriptor', rangeDescriptorKey(rowKey(52, 1, (w) => w.appendString('x'))), '/Local/Range/Table/52/1/"x"/RangeDescriptor'],
    ['first range descriptor', rangeDescriptorKey(KEY_MIN), '/Local/Range/Min/RangeDescriptor'],
    ['txn record', transactionKey(userRow, TXN), `/Local/Range/Table/52/1/"user42"/Transaction/${TXN_STR}`],
    ['store ident', STORE_IDENT_KEY, '/Local/Store/StoreIdent'],
    ['meta2', meta2Key(rowKey(52, 1, (w) => w.appendString('x'))), '/Meta2/Table/52/1/"x"'],
    ['meta2 of the last range', meta2Key(KEY_MAX), '/Meta2/Max'],
    ['meta2 of a system bound', meta2Key(nodeLivenessKey(1)), '/Meta2/System/NodeLiveness/1'],
    ['liveness', nodeLivenessKey(3), '/System/NodeLiveness/3'],
    ['node id gen', NODE_ID_GENERATOR_KEY, '/System/NodeIDGen'],
    ['range id gen', RANGE_ID_GENERATOR_KEY, '/System/RangeIDGen'],
    ['store id gen', STORE_ID_GENERATOR_KEY, '/System/StoreIDGen'],
    ['desc id gen', DESC_ID_GENERATOR_KEY, '/System/DescIDGen'],
    ['cluster id', CLUSTER_ID_KEY, '/System/ClusterID'],
    ['bootstrap version', BOOTSTRAP_VERSION_KEY, '/System/BootstrapVersion'],
    ['setting', clusterSettingKey('kv.range_split.size'), '/System/Settings/"kv.range_split.size"'],
    ['descriptor', descriptorKey(52), '/System/Descriptor/52'],
    ['namespace', namespaceKey(1, 'users'), '/System/Namespace/1/"users"'],
    ['unknown system key', Buffer.concat([SYSTEM_PREFIX, Buffer.from('zzz')]), '/System/?0x7a7a7a'],
    ['unknown top-level prefix', Buffer.from('0a0b', 'hex'), '/?0x0a0b'],
    ['negative table id (not a table)', Buffer.from('87ff', 'hex'), '/?0x87ff'],
    ['unknown local infix', Buffer.from('017a01', 'hex'), '/Local/?0x7a01'],
    ['unknown range-ID suffix', Buffer.from('01698d7278787878', 'hex'), '/Local/RangeID/5/r/?0x78787878'],
    ['truncated raft log index', Buffer.concat([raftLogPrefix(5), Buffer.from([1])]), '/Local/RangeID/5/u/RaftLog/?0x01'],
    ['corrupt range-local', Buffer.from('016b1261', 'hex'), '/Local/Range/?0x1261'],
    ['meta1 (reserved)', Buffer.from('0203', 'hex'), '/Meta1/?0x03'],
  ];
  for (const [name, key, want] of cases) {
    it(`${name}: ${want}`, () => {
      expect(prettyKey(key)).toBe(want);
    });
  }

  it('engine keys print their MVCC timestamp', () => {
    const k = rowKey(52, 1, (w) => w.appendString('user42'));
    expect(prettyEngineKey(encodeMvccKey(k, { wall: 1_700_000_000_000_001, logical: 0 }))).toBe('/Table/52/1/"user42"/@1700000000.000001,0');
    expect(prettyEngineKey(encodeMvccKey(k))).toBe('/Table/52/1/"user42"');
    expect(prettyEngineKey(encodeMvccKey(raftLogKey(7, 9)))).toBe('/Local/RangeID/7/u/RaftLog/9');
    expect(prettyEngineKey(Buffer.from('6100', 'hex'))).toBe('/?0x6100');
  });

  it('prints spans', () => {
    expect(prettySpan(tableSpan(52))).toBe('[/Table/52, /Table/53)');
    expect(prettySpan(NODE_LIVENESS_SPAN)).toBe('[/System/NodeLiveness, /System/?0x6c6976656e65737330)');
  });

  it('never throws, on any bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), fc.constantFrom(0x01, 0x03, 0x04, 0x88, 0xbc, 0x02), (tail, first) => {
        const key = Buffer.concat([Buffer.from([first]), tail]);
        assert.equal(typeof prettyKey(key), 'string');
        assert.equal(typeof prettyKey(Buffer.from(tail)), 'string');
        assert.equal(typeof prettyEngineKey(key), 'string');
      }),
      { numRuns: 5000 },
    );
  });
});

describe('keyspace order', () => {
  it('local < meta2 < system < table data < KEY_MAX', () => {
    const ordered = [
      KEY_MIN,
      raftLogKey(1, 1),
      rangeAppliedStateKey(2),
      rangeDescriptorKey(KEY_MIN),
      transactionKey(KEY_MAX, TXN),
      STORE_IDENT_KEY,
      LOCAL_MAX,
      META2_PREFIX,
      meta2Key(tablePrefix(0)),
      meta2Key(KEY_MAX),
      META2_MAX,
      SYSTEM_PREFIX,
      BOOTSTRAP_VERSION_KEY,
      nodeLivenessKey(0),
      nodeLivenessKey(2 ** 40),
      clusterSettingKey('\uffff'),
      SYSTEM_MAX,
      TABLE_DATA_MIN,
      tablePrefix(0),
      tableIndexPrefix(1, 0),
      rowKey(52, 1, (w) => w.appendString('a')),
      tablePrefix(53),
      tablePrefix(Number.MAX_SAFE_INTEGER),
      KEY_MAX,
    ];
    for (let i = 1; i < ordered.length; i++) {
      expect(compareBytes(ordered[i - 1] as Buffer, ordered[i] as Buffer), `${i}: ${prettyKey(ordered[i] as Buffer)}`).toBeLessThanOrEqual(0);
    }
    expect(ordered.filter((k) => isLocal(k))).toHaveLength(5);
  });

  it('all range-ID-local data of a range is contiguous: replicated, then unreplicated, disjoint from other ranges', () => {
    const idArb = fc.oneof(fc.integer({ min: 0, max: 300 }), fc.maxSafeInteger().map(Math.abs));
    fc.assert(
      fc.property(idArb, idArb, fc.maxSafeInteger().map(Math.abs), (a, b, index) => {
        fc.pre(a !== b);
        const replicated = [rangeAppliedStateKey(a), rangeLeaseKey(a), rangeGCThresholdKey(a), abortSpanKey(a, TXN)];
        const unreplicated = [raftHardStateKey(a), raftTruncatedStateKey(a), raftReplicaIdKey(a), rangeTombstoneKey(a), raftLogKey(a, 0), raftLogKey(a, index)];
        for (const k of replicated) {
          assert.ok(inSpan(k, rangeIdReplicatedSpan(a)));
          assert.ok(!inSpan(k, rangeIdUnreplicatedSpan(a)));
        }
        for (const k of unreplicated) {
          assert.ok(inSpan(k, rangeIdUnreplicatedSpan(a)));
          assert.ok(!inSpan(k, rangeIdReplicatedSpan(a)));
        }
        for (const k of [...replicated, ...unreplicated]) {
          assert.ok(inSpan(k, rangeIdSpan(a)));
          assert.ok(!inSpan(k, rangeIdSpan(b)));
        }
        // Spans of different ranges never overlap, and sort by range id.
        const sa = rangeIdSpan(a);
        const sb = rangeIdSpan(b);
        if (a < b) assert.ok(compareBytes(sa.endKey, sb.key) <= 0);
        else assert.ok(compareBytes(sb.endKey, sa.key) <= 0);
      }),
      { numRuns: 2000 },
    );
  });

  it('the Raft log sorts by index and decodes back', () => {
    fc.assert(
      fc.property(fc.nat(1000), fc.maxSafeInteger().map(Math.abs), fc.maxSafeInteger().map(Math.abs), (r, i, j) => {
        const ki = raftLogKey(r, i);
        const kj = raftLogKey(r, j);
        expect(Math.sign(compareBytes(ki, kj))).toBe(Math.sign(i - j));
        expect(decodeRaftLogKey(ki)).toEqual({ rangeId: r, index: i });
        expect(inSpan(ki, { key: raftLogPrefix(r), endKey: prefixEnd(raftLogPrefix(r)) })).toBe(true);
        const lo = Math.min(i, j);
        const hi = Math.max(i, j);
        expect(inSpan(raftLogKey(r, lo), raftLogSpan(r, lo, hi))).toBe(lo < hi);
      }),
      { numRuns: 2000 },
    );
  });

  it('range-local keys sort with the keys they are addressed by and fall in rangeLocalSpan', () => {
    const keyArb = fc.uint8Array({ maxLength: 8 }).map((b) => Buffer.concat([Buffer.from([0x88 + (b[0] ?? 0) % 100]), b]));
    fc.assert(
      fc.property(keyArb, keyArb, keyArb, (x, y, z) => {
        const [start, k, end] = [x, y, z].sort(compareBytes) as [Buffer, Buffer, Buffer];
        const span = rangeLocalSpan(start, end);
        const inside = compareBytes(k, start) >= 0 && compareBytes(k, end) < 0;
        expect(inSpan(rangeDescriptorKey(k), span)).toBe(inside);
        expect(inSpan(transactionKey(k, TXN), span)).toBe(inside);
        expect(addressOf(transactionKey(k, TXN))).toEqual(k);
        expect(addressOf(rangeDescriptorKey(k))).toEqual(k);
        expect(decodeTransactionKey(transactionKey(k, TXN))).toEqual({ anchor: k, txnId: TXN });
      }),
      { numRuns: 2000 },
    );
  });

  it('a meta2 scan from meta2LookupKey(k) finds the range containing k', () => {
    // Global keys: the first byte is at least 0x02.
    const keyArb = fc.uint8Array({ minLength: 1, maxLength: 4 }).map((b) => Buffer.from([Math.max(2, b[0] as number), ...b.subarray(1)]));
    fc.assert(
      fc.property(fc.uniqueArray(keyArb, { maxLength: 6, comparator: (a, b) => compareBytes(a, b) === 0 }), keyArb, (splits, k) => {
        const bounds = splits.filter((s) => compareBytes(s, KEY_MAX) < 0).sort(compareBytes);
        fc.pre(compareBytes(k, KEY_MAX) < 0);
        const ends = [...bounds, KEY_MAX];
        const metaKeys = ends.map((e) => meta2Key(e)).sort(compareBytes);
        const start = meta2LookupKey(k);
        const found = metaKeys.find((m) => compareBytes(m, start) >= 0) as Buffer;
        const end = decodeMeta2Key(found);
        const idx = ends.findIndex((e) => compareBytes(e, end) === 0);
        const rangeStart = idx === 0 ? KEY_MIN : (ends[idx - 1] as Buffer);
        expect(compareBytes(rangeStart, k)).toBeLessThanOrEqual(0);
        expect(compareBytes(k, end)).toBeLessThan(0);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('decoders', () => {
  it('round-trip the keys they parse', () => {
    expect(decodeNodeLivenessKey(nodeLivenessKey(3))).toBe(3);
    expect(decodeAbortSpanKey(abortSpanKey(9, TXN))).toEqual({ rangeId: 9, txnId: TXN });
    expect(decodeRangeIdLocalKey(rangeLeaseKey(4))).toMatchObject({ rangeId: 4, replicated: true, suffix: 'rll-' });
    expect(decodeMeta2Key(meta2Key(tablePrefix(7)))).toEqual(tablePrefix(7));
    const row = rowKey(52, 3, (w) => w.appendString('k'));
    expect(decodeTableIndexPrefix(row)).toEqual({ tableId: 52, indexId: 3, next: 2 });
    expect(row.subarray(2)).toEqual(encodeTuple([{ kind: 'string', value: 'k' }]));
    expect(tableKey(52, 3, [{ kind: 'string', value: 'k' }])).toEqual(row);
    expect(prettyKey(tableKey(52, 3, [{ kind: 'int', value: 1 }, { kind: 'null' }], ['desc', 'desc']))).toBe('/Table/52/3/1/NULL');
  });

  const corrupt: [string, () => unknown, Buffer][] = [
    ['raft log key cut short', () => decodeRaftLogKey(raftLogKey(5, 1).subarray(0, 10)), raftLogKey(5, 1).subarray(0, 10)],
    ['raft log key that is a hard state key', () => decodeRaftLogKey(raftHardStateKey(5)), raftHardStateKey(5)],
    ['range-ID key with a bad infix', () => decodeRangeIdLocalKey(Buffer.from('01698d7a72667468', 'hex')), Buffer.from('01698d7a72667468', 'hex')],
    ['range-ID key with a truncated id', () => decodeRangeIdLocalKey(Buffer.from('0169f7', 'hex')), Buffer.from('0169f7', 'hex')],
    ['transaction key without its id', () => decodeTransactionKey(rangeDescriptorKey(tablePrefix(1))), rangeDescriptorKey(tablePrefix(1))],
    ['transaction key with an unterminated anchor', () => decodeTransactionKey(Buffer.from('016b1261', 'hex')), Buffer.from('016b1261', 'hex')],
    ['abort span key with a short txn id', () => decodeAbortSpanKey(abortSpanKey(1, TXN).subarray(0, 20)), abortSpanKey(1, TXN).subarray(0, 20)],
    ['liveness key with trailing bytes', () => decodeNodeLivenessKey(Buffer.concat([nodeLivenessKey(1), Buffer.from([0])])), Buffer.concat([nodeLivenessKey(1), Buffer.from([0])])],
    ['not a meta2 key', () => decodeMeta2Key(tablePrefix(1)), tablePrefix(1)],
    ['table key of a system key', () => decodeTableIndexPrefix(CLUSTER_ID_KEY), CLUSTER_ID_KEY],
    ['table key without an index id', () => decodeTableIndexPrefix(tablePrefix(52)), tablePrefix(52)],
    ['addressOf a malformed local key', () => addressOf(Buffer.from('017a', 'hex')), Buffer.from('017a', 'hex')],
  ];
  for (const [name, fn, key] of corrupt) {
    it(`CorruptionError naming the key: ${name}`, () => {
      expect(fn).toThrow(CorruptionError);
      expect(fn).toThrow(`corrupt key ${key.toString('hex')} `);
    });
  }

  it('arbitrary local keys either fail with CorruptionError or decode to parts that rebuild the same key', () => {
    const rebuild: [(k: Buffer) => unknown, (k: Buffer) => Buffer][] = [
      [decodeRaftLogKey, (k) => { const d = decodeRaftLogKey(k); return raftLogKey(d.rangeId, d.index); }],
      [decodeAbortSpanKey, (k) => { const d = decodeAbortSpanKey(k); return abortSpanKey(d.rangeId, d.txnId); }],
      [decodeTransactionKey, (k) => { const d = decodeTransactionKey(k); return transactionKey(d.anchor, d.txnId); }],
      [decodeNodeLivenessKey, (k) => nodeLivenessKey(decodeNodeLivenessKey(k))],
      [decodeTableIndexPrefix, (k) => { const d = decodeTableIndexPrefix(k); return Buffer.concat([tableIndexPrefix(d.tableId, d.indexId), k.subarray(d.next)]); }],
    ];
    const prefix = fc.constantFrom(raftLogPrefix(5), abortSpanKey(5, TXN).subarray(0, 8), Buffer.from('016b12', 'hex'), nodeLivenessKey(1).subarray(0, -1), Buffer.from('0169', 'hex'), tablePrefix(52), Buffer.alloc(0));
    const tail = fc.array(fc.oneof(fc.constantFrom(0x00, 0x01, 0xff, 0x72, 0x75, 0x88, 0x8d), fc.integer({ min: 0, max: 255 })), { maxLength: 24 });
    fc.assert(
      fc.property(prefix, tail, (p, t) => {
        const key = Buffer.concat([p, Buffer.from(t)]);
        for (const [decode, build] of rebuild) {
          let ok = true;
          try {
            decode(key);
          } catch (e) {
            assert.ok(e instanceof CorruptionError, String(e));
            ok = false;
          }
          if (ok) assert.equal(build(key).toString('hex'), key.toString('hex'));
        }
        assert.equal(typeof prettyKey(key), 'string');
      }),
      { numRuns: 5000 },
    );
  });

  it('addressOf: global keys are their own address; replica and store keys have none', () => {
    const k = tablePrefix(9);
    expect(addressOf(k)).toBe(k);
    expect(addressOf(meta2Key(k))).toEqual(meta2Key(k));
    for (const local of [raftLogKey(1, 1), rangeLeaseKey(1), STORE_IDENT_KEY]) {
      expect(() => addressOf(local)).toThrow(CairnError);
      expect(() => addressOf(local)).toThrow(expect.objectContaining({ code: 'storage.key_not_addressable' }));
      expect(() => addressOf(local)).toThrow(`storage: key ${prettyKey(local)} is not addressable`);
    }
  });
});

describe('split keys and spans', () => {
  it('replicatedSpans: sorted, disjoint, and holding every replicated key of the range and nothing of the next', () => {
    const start = tablePrefix(52);
    const end = tablePrefix(53);
    const spans = replicatedSpans(7, start, end);
    for (let i = 1; i < spans.length; i++) expect(compareBytes((spans[i - 1] as Span).endKey, (spans[i] as Span).key)).toBeLessThanOrEqual(0);
    const covered = (k: Buffer): boolean => spans.some((sp) => inSpan(k, sp));
    const row = rowKey(52, 1, (w) => w.appendString('r'));
    for (const k of [rangeAppliedStateKey(7), rangeLeaseKey(7), abortSpanKey(7, TXN), rangeDescriptorKey(start), transactionKey(row, TXN), row]) {
      expect(covered(k), prettyKey(k)).toBe(true);
    }
    for (const k of [raftLogKey(7, 1), raftHardStateKey(7), rangeAppliedStateKey(8), rangeDescriptorKey(end), transactionKey(end, TXN), end, STORE_IDENT_KEY]) {
      expect(covered(k), prettyKey(k)).toBe(false);
    }
    // The first range's data starts at the first global key.
    expect(replicatedSpans(1, KEY_MIN, end)[2]).toEqual({ key: LOCAL_MAX, endKey: end });
    expect(replicatedSpans(1, KEY_MIN, end)[1]?.key).toEqual(rangeDescriptorKey(KEY_MIN).subarray(0, 5));
  });

  it('splits only at global keys outside meta2, below KEY_MAX', () => {
    expect(isValidSplitKey(KEY_MIN)).toBe(false);
    expect(isValidSplitKey(raftLogKey(1, 1))).toBe(false);
    expect(isValidSplitKey(meta2Key(tablePrefix(1)))).toBe(false);
    expect(isValidSplitKey(META2_PREFIX)).toBe(false);
    expect(isValidSplitKey(META2_MAX)).toBe(true);
    expect(isValidSplitKey(nodeLivenessKey(1))).toBe(true);
    expect(isValidSplitKey(tablePrefix(52))).toBe(true);
    expect(isValidSplitKey(KEY_MAX)).toBe(false);
  });

  it('table and index spans hold exactly their keys', () => {
    const row = rowKey(52, 1, (w) => w.appendInt(-1));
    expect(inSpan(row, tableSpan(52))).toBe(true);
    expect(inSpan(row, tableIndexSpan(52, 1))).toBe(true);
    expect(inSpan(row, tableIndexSpan(52, 2))).toBe(false);
    expect(inSpan(tablePrefix(53), tableSpan(52))).toBe(false);
    expect(inSpan(nodeLivenessKey(7), NODE_LIVENESS_SPAN)).toBe(true);
    expect(inSpan(NODE_ID_GENERATOR_KEY, NODE_LIVENESS_SPAN)).toBe(false);
  });

  it('rejects ids that are not non-negative safe integers as bugs', () => {
    expect(() => tablePrefix(-1)).toThrow(/table id/);
    expect(() => raftLogKey(1.5, 1)).toThrow(/range id/);
    expect(() => transactionKey(tablePrefix(1), Buffer.alloc(3))).toThrow(/16 bytes/);
    expect(() => rangeDescriptorKey(raftLogKey(1, 1))).toThrow(/global key/);
  });
});

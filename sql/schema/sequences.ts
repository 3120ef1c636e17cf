/**
 * sql/schema/sequences.ts — CREATE/DROP SEQUENCE and the session side of
 * nextval / currval / setval.
 *
 * Storage: a SequenceDesc (descriptor.ts) in the relation namespace, and one
 * KV key /Table/<id>/1 holding the next value to hand out (int64 big-endian).
 *
 *     +-------------------------------+
 *     | next value (int64, BE, 2's c) |   absent = START not yet handed out
 *     +-------------------------------+
 *
 * Like PostgreSQL's, sequence updates are NOT transactional: values are
 * allocated in a transaction of their own that commits at once, so a
 * rolled-back nextval leaves a gap and concurrent sessions never block each
 * other on a sequence.
 *
 * Caching: each session takes a block of values per allocation (PostgreSQL's
 * CACHE): 1 value first, doubling on each exhaustion up to 1024. Within a
 * session values increase; across sessions they interleave with gaps — as
 * PostgreSQL with CACHE > 1.
 *
 * Evaluation is synchronous (sem/expr.ts EvalFn), so nextval on an empty
 * cache and setval throw SequenceIoNeeded; `SessionSequences.run` catches
 * it around a statement, does the KV work, and re-runs the statement (which
 * has written nothing yet: mutations evaluate every row before their one
 * write batch). Rows already streamed to the client cannot be taken back:
 * such a statement fails with 0A000 instead.
 */
import { tableIndexPrefix } from '../../storage/keys.js';
import { CairnError } from '../../src/util/errors.js';
import { KVBatch, type KVDB } from '../kv.js';
import type { CreateSequenceStatement, DropSequenceStatement, TableName } from '../parser/ast.js';
import { SqlError } from '../parser/sql-error.js';
import { allocateDescId, deleteDescriptor, loadSnapshot, writeNewDescriptor, type CatalogSnapshot } from '../catalog/catalog.js';
import type { SequenceDesc } from '../catalog/descriptor.js';
import type { SequenceAccess } from '../sem/expr.js';
import type { SqlTxn } from '../exec/sql-txn.js';
import { notFound, runSchemaBatch, schemaSnapshot, type DdlResult } from './index-ddl.js';

const INT8_MAX = (1n << 63n) - 1n;
const INT8_MIN = -(1n << 63n);
const MAX_BLOCK = 1024;

function valueKey(id: number): Buffer {
  return tableIndexPrefix(id, 1);
}

function encodeI64(v: bigint): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeBigInt64BE(v);
  return b;
}

export async function createSequence(txn: SqlTxn, database: string, s: CreateSequenceStatement): Promise<DdlResult> {
  const snap = await schemaSnapshot(txn);
  const db = snap.database(s.sequence.catalog ?? database);
  if (db === undefined) throw new SqlError('sql.undefined_database', '3D000', `database "${s.sequence.catalog ?? database}" does not exist`);
  if (snap.sequence(db.id, s.sequence.name) !== undefined && s.ifNotExists) {
    return { tag: 'CREATE SEQUENCE', notices: [`relation "${s.sequence.name}" already exists, skipping`] };
  }
  const opt = new Map(s.options.map((o) => [o.name, o.value]));
  const num = (n: string): bigint | undefined => {
    const v = opt.get(n);
    if (v === undefined || typeof v === 'boolean') return undefined;
    try {
      return BigInt(v);
    } catch {
      throw new SqlError('sql.syntax_error', '42601', `invalid value for sequence option ${n.toUpperCase()}`);
    }
  };
  const increment = num('increment') ?? 1n;
  if (increment === 0n) throw new SqlError('sql.invalid_parameter_value', '22023', 'INCREMENT must not be zero');
  const minValue = num('minvalue') ?? (increment > 0n ? 1n : INT8_MIN);
  const maxValue = num('maxvalue') ?? (increment > 0n ? INT8_MAX : -1n);
  const start = num('start') ?? (increment > 0n ? minValue : maxValue);
  if (minValue >= maxValue) throw new SqlError('sql.invalid_parameter_value', '22023', `MINVALUE (${minValue}) must be less than MAXVALUE (${maxValue})`);
  if (start < minValue) throw new SqlError('sql.invalid_parameter_value', '22023', `START value (${start}) cannot be less than MINVALUE (${minValue})`);
  if (start > maxValue) throw new SqlError('sql.invalid_parameter_value', '22023', `START value (${start}) cannot be greater than MAXVALUE (${maxValue})`);
  const cycle = opt.get('cycle');
  const id = await allocateDescId(txn.kv);
  const desc: SequenceDesc = {
    kind: 'sequence',
    id,
    name: s.sequence.name,
    parentId: db.id,
    version: 1,
    start: String(start),
    increment: String(increment),
    minValue: String(minValue),
    maxValue: String(maxValue),
    cycle: cycle === true || cycle === 'true',
  };
  await writeNewDescriptor(txn.kv, desc, snap.version);
  txn.schemaDirty = true;
  return { tag: 'CREATE SEQUENCE', notices: [] };
}

export async function dropSequences(txn: SqlTxn, database: string, s: DropSequenceStatement): Promise<DdlResult> {
  const snap = await schemaSnapshot(txn);
  const notices: string[] = [];
  const b = new KVBatch();
  for (const n of s.sequences) {
    const db = snap.database(n.catalog ?? database);
    const seq = db !== undefined ? snap.sequence(db.id, n.name) : undefined;
    if (seq === undefined) {
      notFound(s.ifExists, notices, `sequence "${n.name}" does not exist, skipping`, () => new SqlError('sql.undefined_table', '42P01', `sequence "${n.name}" does not exist`));
      continue;
    }
    deleteDescriptor(b, seq, snap.version);
    b.del(valueKey(seq.id));
  }
  await runSchemaBatch(txn, b);
  return { tag: 'DROP SEQUENCE', notices };
}

/** Thrown by a sequence function that needs the KV layer; caught by SessionSequences.run. */
export class SequenceIoNeeded extends CairnError {
  constructor(
    readonly seqName: string,
    readonly op: { kind: 'nextval' } | { kind: 'setval'; value: bigint; isCalled: boolean },
  ) {
    super('sql.sequence_io_needed', `sequences: ${seqName} needs the KV layer`);
  }
}

/** Values allocated to this session and not yet handed out, in order. */
interface Block {
  values: bigint[];
  head: number;
  /** The size of the last allocation (the next one doubles it). */
  size: number;
}

function parseName(name: string): TableName {
  const parts = name.split('.');
  return { name: parts[parts.length - 1] as string, schema: parts.length >= 2 ? parts[parts.length - 2] : undefined, catalog: parts.length === 3 ? parts[0] : undefined };
}

/** One session's sequence state: cached blocks, currval, completed setvals. */
export class SessionSequences implements SequenceAccess {
  private readonly blocks = new Map<string, Block>();
  private readonly last = new Map<string, bigint>();
  private readonly setvalDone = new Map<string, bigint>();

  constructor(
    private readonly db: KVDB,
    private readonly database: () => string,
  ) {}

  nextval(name: string): bigint {
    const b = this.blocks.get(name);
    if (b === undefined || b.head >= b.values.length) throw new SequenceIoNeeded(name, { kind: 'nextval' });
    const v = b.values[b.head++] as bigint;
    this.last.set(name, v);
    return v;
  }

  currval(name: string): bigint {
    const v = this.last.get(name);
    if (v === undefined) throw new SqlError('sql.object_not_in_prerequisite_state', '55000', `currval of sequence "${parseName(name).name}" is not yet defined in this session`);
    return v;
  }

  setval(name: string, value: bigint, isCalled: boolean): bigint {
    const key = `${name}\0${value}\0${isCalled}`;
    if (this.setvalDone.delete(key)) return value;
    throw new SequenceIoNeeded(name, { kind: 'setval', value, isCalled });
  }

  /** Runs a statement, doing the KV work its sequence calls need and re-running it. */
  async run<T>(stmt: () => Promise<T>, canRewind: () => boolean, rewind: () => void): Promise<T> {
    for (let round = 0; ; round++) {
      // Values the attempt takes are handed out again if it must re-run (no map for a session without sequence blocks).
      const heads = this.blocks.size === 0 ? null : new Map<Block, number>();
      if (heads !== null) for (const b of this.blocks.values()) heads.set(b, b.head);
      try {
        return await stmt();
      } catch (e) {
        if (!(e instanceof SequenceIoNeeded)) throw e;
        if (heads !== null) for (const [b, h] of heads) b.head = h;
        if (!canRewind()) throw new SqlError('sql.feature_not_supported', '0A000', `nextval: the cached values of sequence "${e.seqName}" ran out while rows were already sent`);
        if (round > 64) throw new Error('sequences: statement keeps needing sequence I/O');
        rewind();
        await this.io(e);
      }
    }
  }

  private async resolve(snap: CatalogSnapshot, name: string): Promise<SequenceDesc> {
    const n = parseName(name);
    const db = snap.database(n.catalog ?? this.database());
    const seq = db !== undefined ? snap.sequence(db.id, n.name) : undefined;
    if (seq === undefined) throw new SqlError('sql.undefined_table', '42P01', `relation "${name}" does not exist`);
    return seq;
  }

  private async io(e: SequenceIoNeeded): Promise<void> {
    const kv = this.db.newTxn();
    for (let attempt = 0; ; attempt++) {
      try {
        const snap = await loadSnapshot(kv);
        const seq = await this.resolve(snap, e.seqName);
        const inc = BigInt(seq.increment);
        const min = BigInt(seq.minValue);
        const max = BigInt(seq.maxValue);
        const g = new KVBatch();
        g.get(valueKey(seq.id), 'exclusive');
        const [r] = await kv.run(g);
        const stored = r?.kind === 'get' && r.value !== null ? r.value.readBigInt64BE(0) : BigInt(seq.start);
        const w = new KVBatch();
        if (e.op.kind === 'setval') {
          const v = e.op.value;
          if (v < min || v > max) throw new SqlError('sql.numeric_value_out_of_range', '22003', `setval: value ${v} is out of bounds for sequence "${seq.name}" (${min}..${max})`);
          w.put(valueKey(seq.id), encodeI64(e.op.isCalled ? v + inc : v));
          await kv.run(w);
          await kv.commit();
          this.blocks.delete(e.seqName);
          if (e.op.isCalled) this.last.set(e.seqName, v);
          this.setvalDone.set(`${e.seqName}\0${v}\0${e.op.isCalled}`, v);
          return;
        }
        let first = stored;
        if (first > max || first < min) {
          if (!seq.cycle) {
            const which = inc > 0n ? 'maximum' : 'minimum';
            throw new SqlError('sql.sequence_generator_limit_exceeded', '2200H', `nextval: reached ${which} value of sequence "${seq.name}" (${inc > 0n ? max : min})`);
          }
          first = inc > 0n ? min : max;
        }
        const prev = this.blocks.get(e.seqName);
        const want = prev === undefined ? 1 : Math.min(prev.size * 2, MAX_BLOCK);
        // How many values fit before the bound.
        const room = inc > 0n ? (max - first) / inc + 1n : (first - min) / -inc + 1n;
        const n = room < BigInt(want) ? Number(room) : want;
        w.put(valueKey(seq.id), encodeI64(first + inc * BigInt(n)));
        await kv.run(w);
        await kv.commit();
        const b = prev ?? { values: [], head: 0, size: want };
        if (b.head > 0) {
          b.values = b.values.slice(b.head);
          b.head = 0;
        }
        for (let i = 0; i < n; i++) b.values.push(first + inc * BigInt(i));
        b.size = want;
        this.blocks.set(e.seqName, b);
        return;
      } catch (err) {
        if (err instanceof CairnError && err.retryable && attempt < 20) {
          await kv.restart();
          continue;
        }
        await kv.rollback();
        throw err;
      }
    }
  }
}

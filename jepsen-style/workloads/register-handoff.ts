/**
 * register-handoff: a write through n1, then — as soon as it is acknowledged — a read of
 * the same key through every other node. Built to make a missing uncertainty restart
 * (the skip-uncertainty-restart canary, src/kv/canary.ts) visible with the clock-writer
 * nemesis (n1's clock ahead, below the max offset), and valid on a correct build.
 *
 *   round r of key k:  worker 0 (n1)        write k := r      ──ok/fail/info──┐
 *                      workers on n2…nN     read k (all at once, as soon as ┘ the write ends)
 *                      next round when every read has ended
 *
 * Why this shape: a read whose transaction starts after a write was acknowledged must
 * see it. Its timestamp comes from its gateway's HLC; with n1 ahead by f × max offset, a
 * write through n1 gets a timestamp up to that far above the reader gateway's clock —
 * unless some message from n1 (directly or relayed) reached the reader's node between
 * the write's start and the read's start, which pulls its HLC up (every RPC carries the
 * sender's clock). So the read must start right after the acknowledgement (the runner
 * wakes idle workers when an operation ends: no polling delay), through a node that
 * took no part in the write; then its timestamp lies below the write's, inside its
 * uncertainty window: a correct build restarts the read above the write, a build
 * without the restart answers the previous value — a stale read, not linearizable.
 * Readers on every other node: with five nodes and three replicas at least one of
 * them is not a replica of the key's range (whose Raft traffic would bump its clock).
 *
 * Schema: `handoff (k INT PRIMARY KEY, v INT)`; a write is one implicit
 * `INSERT … ON CONFLICT (k) DO UPDATE` (one round, 1PC), a read one implicit SELECT.
 * Values are the round number, unique per key; a key gets ROUNDS_PER_KEY rounds, then a
 * fresh key (keeps the per-key linearizability search small).
 *
 * Checker: Wing–Gong linearizability of a read/write register, split by key.
 * Run it with `--concurrency <nodes>` (one worker per node): workers beyond that on n1
 * stay idle, the extra ones on other nodes read too.
 */
import { linearizableChecker, register } from '../checkers/index.js';
import type { Prng } from '../../src/util/index.js';
import { runStatement } from './workload.js';
import type { OpGenerator, OpRequest, SqlConn, Workload } from './workload.js';

export const ROUNDS_PER_KEY = 50;

type Phase = 'write' | 'writing' | 'read';

export class HandoffGenerator implements OpGenerator {
  private phase: Phase = 'write';
  private key = 0;
  private round = 0;
  /** Readers that have not yet taken this round's read, and those whose read is running. */
  private readonly toRead = new Set<number>();
  private readonly reading = new Set<number>();
  readonly readers: readonly number[];

  constructor(concurrency: number, nodes: number) {
    const others = Array.from({ length: concurrency }, (_, w) => w).filter((w) => w !== 0);
    const offN1 = others.filter((w) => w % nodes !== 0);
    // One node (PostgreSQL): every other worker reads.
    this.readers = offN1.length > 0 ? offN1 : others;
  }

  /** `worker` asks for work: its previous operation (if any) has ended. */
  next(_process: number, worker: number): OpRequest | undefined {
    if (this.reading.delete(worker) && this.phase === 'read' && this.toRead.size === 0 && this.reading.size === 0) this.phase = 'write';
    if (worker === 0) {
      if (this.phase === 'writing') {
        // The write ended (ok, fail or info alike): every reader reads now.
        this.phase = this.readers.length > 0 ? 'read' : 'write';
        for (const r of this.readers) this.toRead.add(r);
      }
      if (this.phase !== 'write') return undefined;
      this.phase = 'writing';
      if (++this.round > ROUNDS_PER_KEY) {
        this.key++;
        this.round = 1;
      }
      return { f: 'write', value: this.round, key: this.key };
    }
    if (this.phase === 'read' && this.toRead.delete(worker)) {
      this.reading.add(worker);
      return { f: 'read', value: null, key: this.key };
    }
    return undefined;
  }
}

export const registerHandoffWorkload: Workload = {
  name: 'register-handoff',
  tables: ['handoff'],
  async setup(conn: SqlConn): Promise<void> {
    await conn.query('CREATE TABLE IF NOT EXISTS handoff (k INT PRIMARY KEY, v INT)');
  },
  generator: (_prng: Prng, concurrency, nodes) => new HandoffGenerator(concurrency, nodes),
  execute(conn, op) {
    const k = op.key as number;
    if (op.f === 'read') {
      return runStatement(conn, op, true, async () => {
        const r = await conn.query('SELECT v FROM handoff WHERE k = $1', [k]);
        return r.rows.length === 0 ? null : Number(r.rows[0]!['v']);
      });
    }
    return runStatement(conn, op, false, async () => {
      await conn.query('INSERT INTO handoff (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v', [k, op.value]);
      return op.value;
    });
  },
  finalOps: () => [],
  checkers: () => [linearizableChecker(register, { deadlineMs: 120_000 })],
};

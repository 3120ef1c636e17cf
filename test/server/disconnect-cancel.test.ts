/**
 * A statement whose client goes away stops on the server (issue 9: in the jepsen
 * cells, clients timed out at 5 s and destroyed their sockets while the server-side
 * statements went on — a lock wait pushes for up to 30 s, a retry loop for 200
 * rounds — piling up contenders). On a real one-node cluster over pgwire:
 *
 *   holder: BEGIN; INSERT id=1           (an intent, kept)
 *   victim: BEGIN; INSERT id=2; UPDATE id=1   → waits on the holder's intent (pusher)
 *   victim's socket destroyed           → the wait ends, the txn rolls back:
 *                                          no pusher waiting, its intent on id=2 gone
 *                                          (a read of id=2 does not wait), aborts counted
 *
 * and the same for an implicit (autocommit) statement, and for statement_timeout,
 * which now also ends a lock wait instead of only being noticed between rows.
 * Every wait is for a condition, bounded well below the pusher's own 30 s limit
 * (which is how long these took before).
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import pg from 'pg';
import { parsePrometheusText } from '../../src/server/metrics.js';
import { ProcessCluster } from '../support/process-cluster.js';

/** Far below the pusher's 30 s lock-wait limit: reaching it means the statement was not cancelled. */
const BOUND_MS = 8_000;

describe('a statement of a client that went away is cancelled on the server', () => {
  let c: ProcessCluster;
  const clients: pg.Client[] = [];

  beforeAll(async () => {
    c = await ProcessCluster.start({ nodes: 1 });
    const setup = await connect();
    await setup.query('CREATE TABLE dc (id INT PRIMARY KEY, v INT)');
  }, 90_000);

  afterAll(async () => {
    for (const cl of clients) await cl.end().catch(() => undefined);
    await c?.close();
  });

  async function connect(): Promise<pg.Client> {
    const cl = new pg.Client({ host: '127.0.0.1', port: c.node(0).spec.sqlPort, user: 'root', database: 'defaultdb' });
    cl.on('error', () => undefined);
    await cl.connect();
    clients.push(cl);
    return cl;
  }
  /** The client's socket destroyed, as the jepsen clients do on a timeout (no Terminate message). */
  function destroy(cl: pg.Client): void {
    (cl as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
  }
  const vars = async (): Promise<(name: string) => number> => {
    const { samples } = parsePrometheusText((await c.http(0, '/_status/vars')).body);
    return (name) => samples.find((s) => s.name === name)?.value ?? NaN;
  };
  /** Polls until `cond` holds; fails after `ms`. */
  const until = async <T>(what: string, f: () => Promise<T>, cond: (v: T) => boolean, ms = BOUND_MS): Promise<number> => {
    const start = Date.now();
    for (;;) {
      const v = await f();
      if (cond(v)) return Date.now() - start;
      if (Date.now() - start > ms) throw new Error(`not within ${ms} ms: ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  const waiting = async (): Promise<number> => (await vars())('cairn_txn_pushers_waiting');

  it('an explicit transaction waiting on a lock: the wait ends, the txn rolls back and its own intent goes', async () => {
    const holder = await connect();
    const victim = await connect();
    const reader = await connect();
    await holder.query('BEGIN');
    await holder.query('INSERT INTO dc VALUES (1, 10)');
    await victim.query('BEGIN');
    await victim.query('INSERT INTO dc VALUES (2, 20)');
    const blocked = victim.query('UPDATE dc SET v = v + 1 WHERE id = 1').then(
      () => 'ok',
      (e: Error) => e.message,
    );
    await until('the victim waiting on the holder', waiting, (n) => n >= 1);
    const aborts0 = (await vars())('cairn_txn_aborts_total');

    destroy(victim);
    expect(await blocked).toMatch(/Connection terminated|ECONNRESET|destroyed/);
    const ms = await until('the victim no longer pushing', waiting, (n) => n === 0);
    // Rolled back: counted, and its intent on id=2 is gone — a read of it neither waits (5 s would be a wait on a
    // live txn's intent) nor sees the row.
    await until('the victim rolled back', vars, (v) => v('cairn_txn_aborts_total') > aborts0);
    await reader.query("SET statement_timeout = '5s'");
    expect((await reader.query('SELECT v FROM dc WHERE id = 2')).rows).toEqual([]);
    console.log(`disconnect-cancel: explicit txn's lock wait ended ${ms} ms after the client went away`);

    await holder.query('COMMIT');
    expect((await reader.query('SELECT id, v FROM dc ORDER BY id')).rows).toEqual([{ id: 1, v: 10 }]);
  }, 60_000);

  it('an implicit statement waiting on a lock: the wait ends and it never applies', async () => {
    const holder = await connect();
    const victim = await connect();
    await holder.query('BEGIN');
    await holder.query('UPDATE dc SET v = 11 WHERE id = 1');
    const blocked = victim.query('UPDATE dc SET v = v + 100 WHERE id = 1').catch((e: Error) => e.message);
    await until('the victim waiting on the holder', waiting, (n) => n >= 1);
    destroy(victim);
    await blocked;
    const ms = await until('the victim no longer pushing', waiting, (n) => n === 0);
    console.log(`disconnect-cancel: implicit statement's lock wait ended ${ms} ms after the client went away`);
    await holder.query('COMMIT');
    expect((await holder.query('SELECT v FROM dc WHERE id = 1')).rows).toEqual([{ v: 11 }]);
  }, 60_000);

  it('statement_timeout ends a lock wait (57014), and ROLLBACK releases the transaction', async () => {
    const holder = await connect();
    const victim = await connect();
    await holder.query('BEGIN');
    await holder.query('UPDATE dc SET v = 12 WHERE id = 1');
    await victim.query("SET statement_timeout = '300ms'");
    await victim.query('BEGIN');
    await victim.query('INSERT INTO dc VALUES (3, 30)');
    const t0 = Date.now();
    await expect(victim.query('UPDATE dc SET v = v + 1 WHERE id = 1')).rejects.toMatchObject({ code: '57014' });
    const took = Date.now() - t0;
    expect(took).toBeLessThan(BOUND_MS);
    await victim.query('ROLLBACK');
    await victim.query("SET statement_timeout = '5s'");
    expect((await victim.query('SELECT v FROM dc WHERE id = 3')).rows).toEqual([]);
    console.log(`disconnect-cancel: statement_timeout 300 ms ended the lock wait after ${took} ms`);
    await holder.query('COMMIT');
    expect((await holder.query('SELECT v FROM dc WHERE id = 1')).rows).toEqual([{ v: 12 }]);
  }, 60_000);
});

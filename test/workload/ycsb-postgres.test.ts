// End to end against a real PostgreSQL (test/support/postgres.ts): init loads
// 2,000 records, then each of YCSB's workloads A–F runs with zero errors, and
// the result object, the table and the JSON file reflect what ran (issue 8).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Command } from 'commander';
import * as hdr from 'hdr-histogram-js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { initYcsb, keyName, runYcsb, WORKLOADS, YcsbRunError, type Output, type WorkloadName } from '../../src/workload/index.js';
import { registerWorkloadCommands } from '../../src/cli/workload-command.js';
import { FieldGenerator } from '../../src/workload/ycsb/field-generator.js';
import { INSERT, READ } from '../../src/workload/ycsb/ycsb-sql.js';
import { Prng } from '../../src/util/prng.js';

const RECORDS = 2000;

class Capture implements Output {
  text = '';
  /** When each write happened (performance.now() ms), for bounds relative to the run's own output. */
  readonly writes: { at: number; s: string }[] = [];
  constructor(readonly isTTY = false) {}
  write(s: string): void {
    this.text += s;
    this.writes.push({ at: performance.now(), s });
  }
}

let server: PostgresServer;
let dir: string;

async function query<T = Record<string, unknown>>(sql: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  try {
    return (await client.query(sql, values)).rows as T[];
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  server = await startPostgres();
  dir = mkdtempSync(join(tmpdir(), 'cairn-ycsb-'));
});

afterAll(async () => {
  await server?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe('YCSB against PostgreSQL', () => {
  it('init creates usertable and loads the records with YCSB keys', async () => {
    const out = new Capture();
    const res = await initYcsb(
      { urls: [server.url], drop: true, insertCount: RECORDS, concurrency: 3, batchSize: 128, splits: 4, progressIntervalMs: 0 },
      { output: out },
    );
    expect(res.rows).toBe(RECORDS);
    expect(res.rowsPerSec).toBeGreaterThan(0);
    expect(res.firstTenthRowsPerSec).toBeGreaterThan(0);
    expect(res.lastToFirstRatio).toBeGreaterThan(0);
    expect(res.splitKeys).toBeNull(); // not Cairn
    expect(out.text).toMatch(/notice: --splits ignored/);
    expect(out.text).toMatch(/loaded 2,000 rows/);
    const [row] = await query<{ n: string; f: string }>(
      'SELECT count(*) AS n, (SELECT field0 FROM usertable WHERE ycsb_key = $1) AS f FROM usertable',
      [keyName(0)],
    );
    expect(Number(row!.n)).toBe(RECORDS);
    expect(row!.f).toHaveLength(100);
    const [last] = await query('SELECT 1 FROM usertable WHERE ycsb_key = $1', [keyName(RECORDS - 1)]);
    expect(last).toBeDefined();
  });

  it('run refuses a server without the table, naming init', async () => {
    await query('CREATE SCHEMA IF NOT EXISTS empty');
    const url = `${server.url}?options=${encodeURIComponent('-c search_path=empty')}`;
    await expect(runYcsb({ urls: [url], workload: 'A', maxOps: 10 })).rejects.toThrow(/run "workload init ycsb" first/);
  });

  it('init draws a progress bar with rows/s and an ETA on a terminal', async () => {
    await query('CREATE SCHEMA IF NOT EXISTS bar');
    const url = `${server.url}?options=${encodeURIComponent('-c search_path=bar')}`;
    const out = new Capture(true);
    const res = await initYcsb({ urls: [url], drop: true, insertCount: 300, concurrency: 2, batchSize: 50 }, { output: out });
    expect(res.rows).toBe(300);
    expect(out.text).toMatch(/\r\[#{30}\] 100\.0% 300\/300 rows +[\d,]+ rows\/s +ETA 0s\x1b\[K\n/);
    const [row] = await query<{ n: string }>('SELECT count(*) AS n FROM bar.usertable');
    expect(Number(row!.n)).toBe(300);
  });

  it('simple-protocol literals carry every character a field can hold', async () => {
    const fields = new FieldGenerator(new Prng(77), 64);
    const values = [keyName(10_000_000), ...fields.values()];
    values[1] = "'\\''\\" + values[1]!.slice(5); // quotes and backslashes side by side
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    try {
      await client.query(INSERT.inline(values));
      const res = await client.query({ text: READ.inline([values[0]!]), rowMode: 'array' });
      expect(res.rows[0]).toEqual(values);
      await client.query('DELETE FROM usertable WHERE ycsb_key = $1', [values[0]]);
    } finally {
      await client.end();
    }
  });

  it('init loads the same data for the same seed, whatever the concurrency', async () => {
    const digest = async (schema: string, concurrency: number): Promise<string> => {
      await query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      const url = `${server.url}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
      await initYcsb({ urls: [url], drop: true, insertCount: 500, concurrency, batchSize: 40, seed: 3 });
      const [row] = await query<{ h: string }>(
        `SELECT md5(string_agg(concat_ws(',', ycsb_key, field0, field5, field9), ';' ORDER BY ycsb_key)) AS h FROM ${schema}.usertable`,
      );
      return row!.h;
    };
    expect(await digest('seq', 1)).toBe(await digest('par', 4));
  });

  it('init sends SPLIT AT only to a server that calls itself Cairn', async () => {
    // A schema ahead of pg_catalog whose version() claims to be Cairn: init
    // then issues ALTER TABLE … SPLIT AT, which PostgreSQL cannot parse.
    await query('CREATE SCHEMA IF NOT EXISTS fake');
    await query("CREATE OR REPLACE FUNCTION fake.version() RETURNS text LANGUAGE sql AS $$ SELECT 'Cairn 0.1 (fake)' $$");
    const url = `${server.url}?options=${encodeURIComponent('-c search_path=fake,pg_catalog')}`;
    await expect(initYcsb({ urls: [url], drop: true, insertCount: 100, splits: 3 })).rejects.toThrow(/syntax error at or near "SPLIT"/);
  });

  it('init refuses to reuse an existing table without --drop', async () => {
    await expect(initYcsb({ urls: [server.url], insertCount: 10 })).rejects.toThrow(/already exists; pass --drop/);
  });

  for (const name of Object.keys(WORKLOADS) as WorkloadName[]) {
    it(`workload ${name} runs with zero errors`, async () => {
      const [before] = await query<{ n: string }>('SELECT count(*) AS n FROM usertable');
      const jsonFile = join(dir, `ycsb-${name}.json`);
      const out = new Capture();
      const res = await runYcsb(
        {
          urls: [server.url, server.url],
          workload: name,
          concurrency: 4,
          durationMs: 1500,
          maxOps: 1500,
          reportIntervalMs: 250,
          method: name === 'A' || name === 'E' ? 'simple' : name === 'B' ? 'noprepare' : 'prepare',
          readModifyWriteInTxn: name === 'F',
          seed: 100,
          jsonFile,
        },
        { output: out },
      );
      const spec = WORKLOADS[name];
      expect(res.total.errors).toBe(0);
      expect(res.errorsBySqlState).toEqual({});
      expect(res.firstError).toBeNull();
      expect(res.config.recordCount).toBe(Number(before!.n));
      expect(Object.keys(res.ops).sort()).toEqual(Object.keys(spec.mix).sort());
      expect(res.total.count).toBeGreaterThan(50);
      expect(res.total.count).toBeLessThanOrEqual(1500);
      for (const [op, p] of Object.entries(spec.mix)) {
        const t = res.ops[op as keyof typeof res.ops]!;
        // Each op type of the mix ran, roughly in proportion (5 % of ≥ 50 ops is ≥ 1 on average).
        if (p >= 0.5) expect(t.count).toBeGreaterThan(res.total.count * p * 0.6);
        expect(t.notFound).toBe(0); // every key chosen was loaded or acknowledged
        expect(t.p50Ms).toBeGreaterThan(0);
        expect(t.p99Ms).toBeGreaterThanOrEqual(t.p50Ms);
        expect(t.maxMs).toBeGreaterThanOrEqual(t.p99Ms);
      }
      // Per-second series and the printed lines.
      expect(out.text).toMatch(/_elapsed___errors__ops\/sec\(inst\)/);
      expect(out.text).toMatch(/__total/);
      const firstOp = Object.keys(spec.mix)[0]!;
      expect(res.series[firstOp as keyof typeof res.series]!.length).toBeGreaterThan(0);
      // Inserts extend the key space and are visible afterwards.
      const inserts = res.ops.insert?.count ?? 0;
      expect(res.insertedUpTo - res.config.recordCount).toBe(inserts);
      const [after] = await query<{ n: string }>('SELECT count(*) AS n FROM usertable');
      expect(Number(after!.n)).toBe(Number(before!.n) + inserts);
      if (inserts > 0) {
        const rows = await query('SELECT 1 FROM usertable WHERE ycsb_key = $1', [keyName(res.insertedUpTo - 1)]);
        expect(rows).toHaveLength(1);
      }
      // The JSON file holds the same result.
      const json = JSON.parse(readFileSync(jsonFile, 'utf8'));
      expect(json.config.workload).toBe(name);
      expect(json.total.count).toBe(res.total.count);
      expect(json.ops[firstOp].p99Ms).toBe(res.ops[firstOp as keyof typeof res.ops]!.p99Ms);
      // …including the full HDR histogram, which decodes to the same counts.
      const decoded = hdr.decodeFromCompressedBase64(json.ops[firstOp].histogram);
      expect(decoded.totalCount).toBe(res.ops[firstOp as keyof typeof res.ops]!.count);
    });
  }

  it('stops at the first error and shows it, or counts errors by SQLSTATE with --tolerate-errors', async () => {
    await query('ALTER TABLE usertable ADD CONSTRAINT short_field3 CHECK (length(field3) < 50) NOT VALID');
    try {
      const out = new Capture();
      const err = await runYcsb(
        { urls: [server.url], workload: 'A', concurrency: 2, maxOps: 2000, requestDistribution: 'uniform', seed: 5 },
        { output: out },
      ).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(YcsbRunError);
      const res = (err as YcsbRunError).result;
      expect(res.firstError?.sqlState).toBe('23514');
      expect(res.firstError?.op).toBe('update');
      expect(res.total.count).toBeLessThan(2000);
      expect(out.text).toMatch(/error: update failed: SQLSTATE 23514/);

      const tolerant = await runYcsb({
        urls: [server.url],
        workload: 'A',
        concurrency: 2,
        maxOps: 400,
        tolerateErrors: true,
        seed: 6,
      });
      expect(tolerant.errorsBySqlState['23514']).toBe(tolerant.ops.update!.errors);
      expect(tolerant.ops.update!.errors).toBeGreaterThan(0);
      expect(tolerant.ops.read!.errors).toBe(0);
      expect(tolerant.total.count + tolerant.total.errors).toBe(400);
    } finally {
      await query('ALTER TABLE usertable DROP CONSTRAINT short_field3');
    }
  });

  it('retries SQLSTATE 40001 and counts the retries apart from errors', async () => {
    // Serializable read-modify-write transactions on three hot records:
    // PostgreSQL aborts the losers with 40001, which the tool re-runs.
    const url = `${server.url}?options=${encodeURIComponent('-c default_transaction_isolation=serializable')}`;
    const res = await runYcsb({
      urls: [url],
      workload: 'F',
      readModifyWriteInTxn: true,
      recordCount: 3,
      requestDistribution: 'uniform',
      concurrency: 6,
      maxOps: 600,
      seed: 9,
    });
    expect(res.total.errors).toBe(0);
    expect(res.ops.readModifyWrite!.retries).toBeGreaterThan(0);
    expect(res.total.retries).toBe(res.ops.readModifyWrite!.retries + res.ops.read!.retries);
    expect(res.total.count).toBe(600);
  });

  it('spreads clients over the URLs and reconnects after a connection is killed (--tolerate-errors)', async () => {
    const urls = ['ycsb_a', 'ycsb_b'].map((app) => `${server.url}?application_name=${app}`);
    let perApp: Record<string, number> = {};
    let killed = 0;
    const run = runYcsb({ urls, workload: 'A', concurrency: 4, durationMs: 1500, reportIntervalMs: 250, tolerateErrors: true, seed: 10 });
    // While it runs: wait (bounded) until all four clients are connected, see
    // where they are, then kill them all once.
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const apps = await query<{ app: string; n: string }>(
        "SELECT application_name AS app, count(*) AS n FROM pg_stat_activity WHERE application_name LIKE 'ycsb_%' GROUP BY 1",
      );
      perApp = Object.fromEntries(apps.map((r) => [r.app, Number(r.n)]));
      if ((perApp['ycsb_a'] ?? 0) + (perApp['ycsb_b'] ?? 0) === 4) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const rows = await query<{ k: boolean }>("SELECT pg_terminate_backend(pid) AS k FROM pg_stat_activity WHERE application_name LIKE 'ycsb_%'");
    killed = rows.filter((r) => r.k).length;
    const res = await run;
    expect(perApp).toEqual({ ycsb_a: 2, ycsb_b: 2 });
    expect(killed).toBe(4);
    // Every killed client came back; an operation caught mid-flight counts as an
    // error (57P01 from the server, or a client-side connection failure).
    expect(res.reconnects).toBe(4);
    expect(res.total.errors).toBeLessThanOrEqual(4);
    for (const state of Object.keys(res.errorsBySqlState)) expect(state).toMatch(/^(57P01|connection:.*|client)$/);
    // Work went on after the kill: the last intervals completed operations.
    const reads = res.series.read!;
    expect(reads[reads.length - 1]!.ops + reads[reads.length - 2]!.ops).toBeGreaterThan(0);
  });

  it('paces to --max-rate and measures only after the ramp', async () => {
    const out = new Capture();
    const res = await runYcsb(
      { urls: [server.url], workload: 'C', concurrency: 4, durationMs: 1000, rampMs: 300, maxRate: 200, reportIntervalMs: 250, seed: 8 },
      { output: out },
    );
    expect(out.text).toMatch(/^ycsb C: \d+ records, 4 clients over 1 URL\(s\), zipfian, method prepare, seed 8\nramping up 4 clients over 300ms\n/);
    const end = performance.now();
    // Measured from the end of the ramp, not from the start of the run. The bounds are taken against the run's own
    // output times, not the wall clock: a loaded machine delays the timers (the ramp's, the reporter's, the
    // duration's) by hundreds of ms, which moved the old fixed bounds (< 1.5 s, first point < 0.45 s); a clock
    // started at the ramp notice instead of the ramp's end still overshoots these by the 300 ms ramp.
    const notice = out.writes.findIndex((w) => w.s.startsWith('ramping up'));
    expect(notice).toBeGreaterThanOrEqual(0);
    const tNotice = out.writes[notice]!.at;
    const tFirstPoint = out.writes[notice + 1]!.at; // the first report (its header and lines) follows the notice
    expect(res.elapsedSec).toBeGreaterThan(0.9);
    expect(res.elapsedSec).toBeLessThanOrEqual((end - tNotice) / 1000 - 0.3 + 0.01);
    // The series starts at the end of the ramp: the first point is one report interval (or a late timer) in.
    const first = res.series.read![0]!;
    expect(first.elapsedSec).toBeGreaterThan(0.2);
    expect(first.elapsedSec).toBeLessThanOrEqual((tFirstPoint - tNotice) / 1000 - 0.3 + 0.01);
    expect(first.opsPerSecCum).toBeLessThan(400);
    // Pacing caps the rate (the mechanism under test: < 260/s whatever the machine). Reaching it depends on a machine
    // that can keep up — CI at load ~12 managed 73/s of 200, so the old floor of 40/s was within a 2× slower
    // machine's reach; the floor only shows that the cap was checked on a run that did work (10/s, 20× below the
    // paced rate: 4 clients of point reads on PostgreSQL never come near it).
    const rate = res.total.count / res.elapsedSec;
    expect(rate).toBeGreaterThan(10);
    expect(rate).toBeLessThan(260);
  });

  it('the CLI parses the flags and runs both phases', async () => {
    const program = new Command().exitOverride();
    registerWorkloadCommands(program);
    const jsonFile = join(dir, 'cli.json');
    const writes: string[] = [];
    const origWrite = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((s: string) => (writes.push(String(s)), true)) as typeof process.stdout.write;
    try {
      await program.parseAsync(
        ['workload', 'init', 'ycsb', '--drop', '--insert-count', '500', '--concurrency', '2', '--json', join(dir, 'init.json'), server.url],
        { from: 'user' },
      );
      await program.parseAsync(
        ['workload', 'run', 'ycsb', '--workload', 'd', '--max-ops', '300', '--concurrency', '3', '--duration', '5s', '--json', jsonFile, server.url],
        { from: 'user' },
      );
    } finally {
      process.stdout.write = origWrite;
    }
    expect(process.exitCode ?? 0).toBe(0);
    expect(writes.join('')).toMatch(/loaded 500 rows/);
    expect(JSON.parse(readFileSync(join(dir, 'init.json'), 'utf8'))).toMatchObject({ rows: 500, splitKeys: null });
    const json = JSON.parse(readFileSync(jsonFile, 'utf8'));
    expect(json.config).toMatchObject({ workload: 'D', concurrency: 3, maxOps: 300, durationMs: 5000, recordCount: 500, requestDistribution: 'latest' });
    expect(json.total.count).toBe(300);
  });
});

/**
 * Storage micro-benchmark (`npm run bench:storage [-- --keys N]`): MVCC over
 * LevelEngine beside raw LevelDB, at N keys (default 1,000,000) of 1 KB
 * values. Prints ops/s for
 *   - put, synced batches of 100 (group commit), evaluated one batch after
 *     another: of fresh keys (MVCC writes one head per put) and overwrites of
 *     loaded keys (MVCC reads the head, and with an inline value also moves
 *     the displaced version into the history: two ~1 KB entries per put);
 *   - the floors under overwrites: raw LevelDB writing two 1 KB entries per
 *     put against one (what an inline overwrite writes), and raw LevelDB
 *     reading each key before putting it (what every MVCC write does);
 *   - overwrites with the next batch evaluated while the previous one syncs,
 *     and again with its heads prefetched by one getMany during the sync;
 *     fresh keys the same way (prefetched, evaluated during the sync: how a
 *     store's group commit runs them);
 *   - point get: raw getSync vs mvccGetSync (one getSync through the head,
 *     two when the value is out of line),
 *   - scan of 100 rows: raw iterator nextv(100) vs mvccScan(maxKeys 100),
 * with the MVCC/raw ratio. Each pair runs in alternating slices so load from
 * other processes hits both alike. The target: MVCC within 2× of raw (ratio
 * ≥ 0.5). It prints figures and never fails on them. Under each put row:
 * entries and bytes one MVCC put writes, process CPU per phase, libuv pool
 * jobs per batch. At the end (medians over --runs) it states issue 2's
 * criterion plainly: the fresh-put, point-get and scan ratios against 0.5,
 * the overwrite ratio beside raw LevelDB's own read-before-put floor, and
 * what one put writes.
 *
 * Flags: --keys N, --seconds S (per measurement, default 3), --runs R (repeat
 * everything on fresh stores, then print medians), --dir D (default a
 * temporary directory, removed at the end; reused by every run).
 *
 * And --inline-limit N|inf: values longer than N bytes are written out of
 * line (mvcc-value.ts, "Inline or out of line"; default the library's, 4 KiB,
 * so the 1 KB values here stay inline).
 *
 * Before this session's format work (07:19 UTC, 1,000,000 keys, --seconds 2
 * --runs 3, load average 7-15; medians of the per-run ratios), ops/s:
 *   load, unsynced batches of 1000      raw 106,545   mvcc 75,441   0.55
 *   point get, one version per key      raw  65,434   mvcc 38,645   0.67
 *   scan rows/s, one version per key    raw 116,124   mvcc 74,886   0.61
 *   put fresh keys, synced 100          raw  36,439   mvcc 22,860   0.67
 *   put overwrites, synced 100          raw  36,162   mvcc  6,377   0.25
 *   floor: raw 2 entries vs 1 per put   raw  28,968   raw2 21,997   0.65
 *   overwrites, pipelined               raw  27,280   mvcc  7,543   0.28
 *   overwrites, pipelined + prefetch    raw  24,470   mvcc  9,027   0.26
 *   point get, after the puts           raw  12,215   mvcc  9,563   0.78
 *   scan rows/s, after the puts         raw  64,175   mvcc 30,444   0.47
 * After (08:29-08:42 UTC, same flags, default inline limit 4 KiB — the 1 KB
 * values take the same inline path as before; load average 20-36):
 *   load 0.69, point get 0.64, scan 0.50, fresh puts 0.54, overwrites 0.12,
 *   floor 2 entries 0.73, floor one getSync before each put 0.15, pipelined
 *   0.22, + prefetch 0.20, get after the puts 0.92, scan after 0.62.
 * The new floor row is the finding: raw LevelDB that reads each loaded key
 * before putting it runs at 0.15 of blind raw puts, and MVCC overwrites
 * (0.12) sit on that floor in every run.
 * Single runs swung by ±0.15 in ratio; later in the session the load
 * average reached 20-35 and wall-clock ratios lost their meaning (raw point
 * gets at 2,259/s), so the costs below are CPU time per op, read from
 * /proc/self/task/<tid>/stat for the main thread and for the others (the
 * libuv pool and LevelDB's one background compaction thread), which load
 * changes far less. 300,000 keys × 1 KB, one process, µs per op:
 *                                          main        other threads
 *   raw put, overwrite                      2.5          8.5
 *   raw getSync, then put                   8.3          2.8
 *   MVCC overwrite, value inline           37.3         59.5
 *   MVCC overwrite, value out of line      27.8         20.0
 *   MVCC fresh put, inline / out of line    8.8 / 8.0    6.3 / 5.8
 *   raw getSync                             5.8          3.1
 *   MVCC get, inline / out of line         12.5 / 13.8   9.6 / 3.8
 *   scan per row: raw / inline / out        3.3 / 5.5 / 8.0   2.5 / 3.5 / 4.3
 * and LevelDB's own statistics after 40,000 overwrites: raw compacted
 * 5 MB into level 2, MVCC inline 135 MB (it writes two value-sized entries
 * per overwrite, and its history grows where raw overwrites in place).
 *
 * Why an overwrite costs ~4× a fresh put (issue 2): (1) its head read is a
 * random block read (~20-30 µs here, where a fresh key's miss is answered
 * by the bloom filter in ~2 µs), which LevelDB also charges to seek
 * compaction; (2) an inline value is written twice over its life — in the
 * head, then again at its version key when displaced — and compaction CPU
 * follows the bytes (the "other threads" column). Out-of-line values remove
 * (2) — half the total CPU per overwrite — but not (1), and they cost reads
 * a second (cached) getSync: +10-40% CPU per get, +45% per scanned row at
 * 1 KB. In wall-clock A/B runs in one process (raw / inline / out of line
 * above 128 bytes, 400,000 keys, load 34) overwrites came out 0.30 vs 0.31
 * of raw, gets 0.67 vs 0.48, scans 0.32 vs 0.24, fresh puts 0.69 vs 0.55:
 * the DBs share LevelDB's one compaction thread, so one DB's compaction debt
 * stalls the others' writes too. So the default keeps 1 KB values inline,
 * and the 0.5 target for overwrites is not reached by either layout on this
 * machine: the floor rows show raw LevelDB itself at ~0.5-0.65 once it writes
 * two entries per put or reads before each put. Reaching it needs overwrites
 * that neither read the head from disk nor rewrite the value: out-of-line
 * values plus an in-memory cache of heads covering the written keys.
 *
 * Session of 11:30-12:35 UTC (issue 2: "halve the overwrite cost"), load
 * average 33-47 throughout (seven other sessions). One full run at 1,000,000
 * keys, --seconds 2, before any change (load 33; a run took ~13 minutes, so
 * runs 2-3 were abandoned), ops/s:
 *   load 0.56, point get 0.72, scan 0.27, fresh puts 0.69,
 *   put overwrites             raw 3,293   mvcc   787   0.24
 *   floor: 2 entries per put   raw 7,975   raw2 5,189   0.65
 *   floor: getSync before put  raw 2,454   read 615     0.25
 *   pipelined 0.18, + prefetch 0.20, get after 1.01, scan after 0.69.
 * Overwrites (0.24) sit on the read-before-write floor (0.25) again: at this
 * load the wall-clock gap to blind raw puts is the head read, not the MVCC
 * code. Where the overwrite's main-thread CPU goes (CPU profile of 30,000
 * overwrites in synced-off batches of 100 over 100,000 loaded keys, one
 * process, load ~35): the native getSync of the head 38 % (of which 33 %
 * inside LevelDB: table lookup, block read, decompression), the native
 * batch submission 18 % (classic-level's batch_do copying two ~1 KB entries
 * per put into a leveldb::WriteBatch), idle/GC 22 %, and all MVCC JavaScript
 * together ~15 % (applyPlan 8.6 — encodeHead 4.9, encodeVersion 1.4,
 * batch index 2.0 —, decodeHead with checksum verification 3.2, key
 * encoding 1.4). So the "~29 µs of JavaScript per overwrite" read from the
 * CPU table above is mostly native work on the JS thread; cutting the MVCC
 * JavaScript to zero would save ~15 % of the main thread and nothing of the
 * ~50 µs of background (compaction) CPU. This session's JS cuts (version
 * keys from the head's key; one capped history array) are small: an
 * in-process A/B of overwrite evaluation without the write (MemoryEngine,
 * 20,000 keys × 1 KB, the two builds interleaved, 15 samples of 20,000
 * overwrites each) at load 40-47 was noise (52.0 vs 55.0, 31.5 vs 31.0 µs
 * CPU per op), and at load 16-18 three back-to-back runs gave before 18.0,
 * 15.0, 13.0 / after 16.5, 14.5, 12.0 (medians 15.0 -> 14.5; the CPU clock
 * has 0.5 µs resolution at this sample size).
 * One run after the change (1,000,000 keys, --seconds 2, load 39-40 with
 * test runs of other sessions beside it): load 0.49, point get 0.35, scan
 * 0.32, fresh puts 0.63, overwrites 0.34 (raw 1,669/s, mvcc 567/s), floor 2
 * entries 0.56, floor getSync before put 0.29, pipelined 0.30, + prefetch
 * 0.21, get after 0.66, scan after 0.52 — the raw side itself ran at
 * 1,669 overwrites/s against 28,609 on a quiet machine, so these ratios
 * compare noise, not code.
 * Inline (default) against out of line (--inline-limit 1), 300,000 keys,
 * --seconds 1, one run each, back to back (load 16 then 7-10):
 *                                   inline     out of line
 *   put overwrites                  0.14       0.16   (mvcc 3,524 / 7,489/s)
 *   floor: getSync before each put  0.20       0.28
 *   point get / after the puts      0.92/1.01  0.71/0.64
 *   scan / after the puts           0.57/0.10  0.32/0.30
 *   JS-thread µs per overwrite      33.0       32.7   (floor: 28.0 / 24.3)
 * Out of line does not move overwrites against raw and costs scans their
 * 0.5, so 1 KB values stay inline. The JS-thread column says where the
 * overwrite stands: the raw getSync-then-put floor costs 24-28 µs on the
 * JS thread at 300,000 keys, MVCC 33 µs, so the MVCC code itself is ~5-9
 * µs per overwrite; the 0.5 target against blind raw puts is out of reach
 * of any layout that reads the key before writing it (write-too-old,
 * intents and stats all need that read), unless the heads of written keys
 * are cached in memory.
 * Session 6 (19:35-19:54 UTC, 1,000,000 keys, --runs 3 --seconds 2, load
 * 17-24; medians of the per-run ratios), inline (default) then out of line
 * (--inline-limit 1), back to back:
 *                                   inline     out of line
 *   load                            0.45       0.35
 *   point get                       0.50       0.40
 *   scan                            0.38       0.14
 *   put fresh keys                  0.56       0.41
 *   put overwrites                  0.24       0.28
 *   floor: getSync before each put  0.26       0.26
 *   floor: 2 entries per put        0.88       0.59
 *   pipelined / + prefetch          0.22/0.30  0.31/0.26
 *   get / scan after the puts       1.15/0.54  0.47/0.47
 *   JS-thread µs per scanned row    8.0-9.3    17.4-18.1  (raw 3.4-3.9)
 * Same verdict as before: out of line moves overwrites by noise and halves
 * scans, so 1 KB values stay inline; overwrites sit on the read-before-write
 * floor.
 * The CockroachDB layout (every version at its own key, no head) was not
 * adopted: a point read would need an iterator seek (~135 µs to create one
 * here, against ~10 µs for a getSync), which would put point gets far below
 * 0.5; the out-of-line mode above already is that layout plus a small head
 * (the value written once), and it is one flag away (--inline-limit 1) for
 * the comparison once the machine is quiet enough to repeat it.
 *
 * Session 7 (22:42-22:56 UTC, 1,000,000 keys, --runs 3 --seconds 2, load
 * 29-37; per-run figures in bench/results/storage-2026-11-30T22-42Z.md).
 * The MVCC put rows now evaluate as a replica does: a batch of >= 16 point
 * writes reads its heads with one getMany first (mvccPrefetch; LevelEngine
 * splits it into 4 pool jobs), and the old path (a getSync per head) has its
 * own row. Medians: overwrites 0.32 prefetched vs 0.19 with getSyncs
 * (JS-thread 24.6 vs 55.0 µs per put; the wall-clock ratio swung 0.13-0.86
 * run to run), read-before-put floor 0.37, fresh puts 0.71 (0.46 with
 * getSyncs), point get 1.07, scan 0.52, scan after the puts 0.34.
 * Scan cost per row (standalone, 200,000-300,000 keys, JS-thread CPU): raw
 * 2.4-2.9 µs, the engine iterator alone over the MVCC store 2.8-3.6, mvccScan
 * 3.6-4.5 — the MVCC decoding is ~1 µs/row (a quarter of it the xxhash
 * checksum), and the same store scanned by the storage/ of 7bf7d45 (session
 * 5) costs the same (4.87 vs 5.10 µs/row, interleaved in one process): the
 * 8-9 µs/row of session 6's rows is the DB's state at that moment (fresh L0
 * files and compaction right after the load), not a code regression. After
 * 60,000 overwrites of 300,000 keys a scan reads ~30 % more entries (the
 * displaced versions between heads) and 2.2 nextv per 100 rows, and its
 * JS-thread cost per row doubles (7.6 vs raw 3.8); nextv calls themselves
 * cost nothing measurable (85 + 16 rows = 101 rows in one call), so that
 * doubling is still unexplained. Ruled out: iterator creation + close (~10
 * µs either store, fresh or overwritten) and MVCC JavaScript (mvccScan over
 * a MemoryEngine with 20 % of keys overwritten: 1.34 -> 1.70 µs/row, the
 * extra entries). What grows is the LevelDB side: the engine iterator alone
 * over the overwritten MVCC store costs 3.6 µs of JS-thread CPU per entry
 * against raw's 2.8 over its own overwritten store.
 *
 * Session 8 (01:05-01:30 UTC, load 15-34). New diagnostic lines under the
 * rows: what an MVCC put writes and the process CPU (all threads) of its
 * phases; nextv calls and entries per 100-row MVCC scan and LevelDB's
 * level-0 files; --compact reads again after compacting both stores.
 *   - What an overwrite writes: 2 entries, 2,127 bytes per 1 KB put (the new
 *     head with its value inline, and the displaced version at its version
 *     key); a fresh put 1 entry, 1,058 bytes; raw 1 entry, 1,038. No stats
 *     key (callers keep stats in memory; a replica writes one per batch) and
 *     no separate meta record: the head is the intent/meta record.
 *   - What it costs (process CPU µs per overwrite, 300,000 keys): heads read
 *     by getMany 19-24 (cold blocks; ~4 when cached), evaluation 2-7, write
 *     + sync 31-47, against ~8-10 for a whole raw put. LevelDB's write alone
 *     (unsynced batches of 100, all threads): ~2-3 µs per 40-byte entry, ~5
 *     per 1 KB, ~9 per 2 KB — so out-of-line values (1 KB + a ~40-byte head,
 *     still two entries) would cut the write by about a third, and no head
 *     layout writes one entry per overwrite. CPU-bound (this machine under
 *     load), overwrites sit near 0.3 of raw by construction; a blind put
 *     cannot skip the head read (the new head carries the displaced
 *     version's index entry, stats need the old head, write-too-old its
 *     timestamp). Only a quiet, fsync-bound machine can show 0.5.
 *   - Scans after the puts: a 100-row MVCC scan read 185 entries at 300,000
 *     keys and 329 at 100,000 (the displaced versions sit between heads and
 *     each is a 1 KB copy through the pool and the JS thread), and until
 *     this session it took a second nextv in every scan (2.09 per scan
 *     measured after 30,000 overwrites of 100,000 keys): the first chunk
 *     guessed one entry per head. It is now sized by the entries per head
 *     recent scans met (mvcc.ts): 1.00 nextv per scan in every state.
 *     A/B at 300,000 keys, --seconds 1, base (4a8c715) and this build
 *     alternating, one run each, three rounds (load 16-23; per-run figures
 *     in bench/results/storage-2026-12-01T01-21Z.md): scan after the puts
 *     0.16/0.26/0.39 -> 0.45/0.53/0.49 (medians 0.26 -> 0.49); the other
 *     rows moved by noise (overwrites 0.26 -> 0.33, fresh puts 0.93 -> 0.72,
 *     point get 0.61 -> 0.72, scan one version per key 0.54 -> 0.71). The
 *     JS-thread CPU per scanned row after the puts stays 7-10 µs against
 *     raw's 3-3.5: what is left is the versions themselves. The same A/B at
 *     1,000,000 keys (load 23-37) was noise in every row (scan after the
 *     puts 0.45 -> 0.42; 137 entries per 100 rows there).
 *   - Compaction is not the scan gap: after compactRange of both stores
 *     (100,000 keys, one run) the MVCC scan still read 328 entries per 100
 *     rows and ran 0.20 of raw.
 *   - Fairness: same value (1 KB), same sync, same batch of 100, same
 *     LevelDB options — but the raw side wrote through abstract-level's
 *     batch(), which clones and checks every op, where LevelEngine.write
 *     calls classic-level's `_batch`. In a standalone A/B (one process,
 *     synced batches of 100 × 1 KB, load ~20) that cost 5.5-8 µs of
 *     JS-thread CPU per put against 1-2.3 (process CPU 12-16 vs 7-8). Raw
 *     writes now take `_batch` too (rawBatch). In this bench's own JS-thread
 *     column the raw put cost did not visibly move (1.8-3.3 µs/op in one run
 *     at 300,000 keys, load 18-24, against 1.1-3.2 before), so the put
 *     ratios recorded before were flattered by at most that handicap.
 *   - The seek past long histories (mvcc.ts scanSeekVersions) skips what a
 *     chunk has not read yet: a key with hundreds of versions costs one
 *     chunk and a seek (test/storage/mvcc-scan-iteration: 600 versions, < 200
 *     entries read). It does not help where hot keys are dense: with every
 *     10th of 20,000 keys holding 100 versions, a 100-row scan read ~1,120
 *     entries either way (the learned first chunk takes the versions in; 1
 *     seek per scan), ~45 µs of process CPU per row both ways (load 35).
 *     Versions interleaved with heads are read by whatever scans them; only
 *     GC or a history kept apart from the heads would change that.
 *
 * Session 9 (04:08-05:03 UTC, load 13-47; issue 2: give fresh puts margin).
 *   - Bloom filter: classic-level 3.0.0 opens LevelDB with a 10-bit bloom
 *     filter (binding.cc, NewBloomFilterPolicy(10)); nothing to switch on.
 *     A fresh key's head read skips data blocks, but once earlier fresh keys
 *     fill the memtable and level-0 files overlapping their range, a miss
 *     still costs a memtable search plus an index-block seek and a filter
 *     probe per overlapping table: ~6 us per getSync miss (100,000 keys,
 *     load ~30) against ~0.7 us when no table overlaps the key.
 *   - Where a fresh put's JS-thread time goes (one process, 100,000 keys,
 *     synced batches of 100, load 25-36): raw 2.1-2.6 us per put, MVCC
 *     7.6-10.8 — heads read 1.9-3.3 (the getMany call, its completion, the
 *     read-ahead map), evaluation 2.7-3.6, write 2.4-2.5 (raw's whole put).
 *     Process CPU: MVCC 27-33 us vs raw 11-13. Inside the evaluation (pure
 *     JS over a stub reader, CPU profile): encodeHead ~45 % (Buffer-pool
 *     refills every ~7 heads, the 1 KB copy, xxhash), the batch's skip list
 *     ~19 % (one search for the head read, one for the write), key encoding
 *     ~5 %. Splitting the prefetch into 4 pool jobs or 1 made no JS-thread
 *     difference for fresh keys.
 *   - Changes: WriteBatch builds its skip list at its first write and skip
 *     lists share one search path (retained heap per empty batch 874 -> 67
 *     bytes, per one-op batch 985 -> 378); the checksum takes a Uint8Array
 *     view instead of a subarray (evaluation 2.11 -> 1.98 us per fresh put,
 *     medians of 3 alternating runs, load 37-39). Small against the ~5-8 us
 *     JS-thread gap, most of which is the head read itself.
 *   - New rows: fresh keys as a store writes them (heads prefetched and the
 *     batch evaluated during the previous sync) and, at the end, issue 2's
 *     criterion stated plainly (fresh put / get / scan against 0.5, the
 *     overwrite ratio beside the read-before-put floor, entries and bytes
 *     per put); libuv pool jobs per batch under each put row (MVCC 4 getMany
 *     jobs + 1 write, raw 1).
 *   - A/B at 1,000,000 keys, --seconds 1.5, base (f21f8d1) and the lazy
 *     skip list build alternating, 3 runs each, load 29-47 (per-run figures
 *     in bench/results/storage-2026-12-01T04-37Z.md), medians base -> new:
 *     fresh puts 0.99 -> 0.63 (runs 1.14/0.66/0.99 vs 1.12/0.63/0.61), point
 *     get 0.83 -> 0.73, scan 0.70 -> 0.42 (0.27-1.21 per run), overwrites
 *     0.18 -> 0.24, read-before-put floor 0.31 -> 0.18 (0.16-0.55 per run);
 *     new row, fresh puts pipelined 0.53/1.06/0.82. At this load single
 *     rows swing by more than any of these changes could move them: noise,
 *     in both directions. The quiet-machine run stays the lead's.
 *
 * Session 10 (issue 2: fresh puts clearly above 0.5). The head read itself
 * makes LevelDB compact: LevelDB 1.20 charges a seek to the first table of
 * every Get that probes two or more tables — bloom-filtered misses included
 * — and compacts a table after max(100, size / 16 KiB) charges (seek
 * compaction; db/version_set.cc). A fresh key's miss probes every L0 file
 * and one table per level, so it is charged every time. Raw LevelDB alone
 * (300,000 keys loaded, 200,000 fresh puts in unsynced batches of 100, load
 * ~40): blind puts compacted 18 MB written / 6 MB read, the same puts with
 * one getMany of each batch first 40 / 27 MB (94 -> 210 bytes written per
 * put; process CPU 8.2-9.1 -> 15.1-16.0 µs per put). New, to tell MVCC's
 * code from LevelDB's cost of any read-before-write: the row "floor: raw,
 * fresh keys read by one getMany first" (no MVCC at all), and under each
 * put row the compaction MB per 1,000 puts of each store. One run at
 * 100,000 keys, --seconds 1, load ~30: fresh puts 0.68, its raw floor 0.50.
 */
import { Level } from 'level';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LevelEngine } from '../storage/level-engine.js';
import { DEFAULT_INLINE_VALUE_LIMIT, mvccGetSync, mvccPrefetch, mvccPut, mvccScan, setInlineValueLimit } from '../storage/mvcc.js';
import type { Timestamp } from '../src/util/hlc.js';
import { Prng } from '../src/util/prng.js';
import { CountingReader } from '../test/support/counting-reader.js';

interface RawDb {
  open(): Promise<void>;
  close(): Promise<void>;
  getSync(key: Buffer): Buffer | undefined;
  batch(ops: { type: 'put'; key: Buffer; value: Buffer }[], opts?: { sync?: boolean }): Promise<void>;
  /** classic-level's hook under batch(): the native write without abstract-level's per-op clone and checks. */
  _batch?(ops: { type: 'put'; key: Buffer; value: Buffer }[], opts: { sync: boolean }): Promise<void>;
  iterator(opts: { gte?: Buffer; highWaterMarkBytes?: number }): { nextv(n: number): Promise<[Buffer, Buffer][]>; close(): Promise<void> };
  getMany(keys: Buffer[]): Promise<(Buffer | undefined)[]>;
  getProperty(name: string): string;
  compactRange(start: Buffer, end: Buffer): Promise<void>;
}

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return dflt;
  const v = Number(process.argv[i + 1]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`bench: --${name} needs a positive number`);
  return v;
}

const KEYS = arg('keys', 1_000_000);
/** Values longer than this go out of line (`--inline-limit N`, or `inf`: all inline). */
const INLINE_LIMIT = process.argv.includes('--inline-limit') && process.argv[process.argv.indexOf('--inline-limit') + 1] === 'inf' ? Infinity : arg('inline-limit', DEFAULT_INLINE_VALUE_LIMIT);
setInlineValueLimit(INLINE_LIMIT);
const RUNS = arg('runs', 1);
/** --compact: after the puts, compact both stores and read again. */
const COMPACT = process.argv.includes('--compact');
/** Fresh keys are drawn from this many keys above the loaded ones. */
const FRESH_SPACE = 1 << 30;
/** Makes a raw key that sorts right after its head, like an MVCC version key. */
const VERSION_SUFFIX = Buffer.alloc(12, 0xfe);
const SECONDS = arg('seconds', 3);
const VALUE = Buffer.alloc(1024, 0x61);
const BATCH = 100;
const LOAD_BATCH = 1000;

function userKey(i: number): Buffer {
  return Buffer.from(`user${String(i).padStart(10, '0')}`);
}

/** Rows the summary (issue 2's criterion) is read from. */
const FRESH = 'put fresh keys (synced batches of 100)';
const FRESH_PIPELINED = 'put fresh keys, next batch evaluated during the sync';
const OVERWRITE = 'put overwrites (synced batches of 100)';
const FLOOR_READ = 'floor: raw, one getSync before each put';
const FLOOR_FRESH = 'floor: raw, fresh keys read by one getMany first';
const readRow = (what: 'point get (getSync)' | 'scan of 100 rows/s', when: string): string => `${what}, ${when}`;

type Step = () => void | Promise<void>;

/**
 * Measures two steps (each doing `per` ops) in alternating slices until
 * SECONDS elapse for each, so that load from other processes on a shared
 * machine hits both alike; returns [ops/s of a, ops/s of b].
 */
async function compare(per: number, a: Step, b: Step): Promise<[number, number]> {
  const slices = 8;
  const sliceMs = (SECONDS * 1000) / slices;
  const ops = [0, 0];
  const ms = [0, 0];
  const cpu = [0, 0];
  for (let s = 0; s < slices * 2; s++) {
    const which = s % 2;
    const step = which === 0 ? a : b;
    const cpu0 = mainThreadCpuMs();
    const start = performance.now();
    const deadline = start + sliceMs;
    while (performance.now() < deadline) {
      for (let i = 0; i < 10; i++) {
        const r = step();
        if (r !== undefined) await r;
        ops[which] = (ops[which] as number) + per;
      }
    }
    ms[which] = (ms[which] as number) + performance.now() - start;
    cpu[which] = (cpu[which] as number) + mainThreadCpuMs() - cpu0;
  }
  lastCpu = Number.isNaN(cpu[0]) ? null : [((cpu[0] as number) * 1000) / (ops[0] as number), ((cpu[1] as number) * 1000) / (ops[1] as number)];
  return [((ops[0] as number) * 1000) / (ms[0] as number), ((ops[1] as number) * 1000) / (ms[1] as number)];
}

/**
 * CPU time of the JS thread in ms (Linux: /proc, 10 ms resolution; NaN
 * elsewhere). On this shared machine wall-clock ratios swing with the load
 * while the CPU an op costs on the JS thread barely moves, so each row also
 * prints it (the background threads — libuv pool, LevelDB's one compaction
 * thread shared by both stores — cannot be split between the two sides).
 */
function mainThreadCpuMs(): number {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'latin1');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return NaN;
  }
}

/** µs of JS-thread CPU per op of each side of the last compare, if known. */
let lastCpu: [number, number] | null = null;

/** Process CPU (all threads: JS, libuv pool, LevelDB's compaction thread) in µs. */
function processCpuUs(): number {
  const c = process.cpuUsage();
  return c.user + c.system;
}

/**
 * LevelDB's compaction totals of one DB so far, [MB read, MB written], summed
 * over the levels of its `leveldb.stats` table (whole MB: LevelDB prints them
 * so). Each DB keeps its own, although both share LevelDB's one background
 * thread.
 */
function compactionMb(getProperty: (name: string) => string): [number, number] {
  let read = 0;
  let written = 0;
  for (const line of getProperty('leveldb.stats').split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length !== 6 || !/^\d+$/.test(f[0] as string)) continue;
    read += Number(f[4]);
    written += Number(f[5]);
  }
  return [read, written];
}

/** Figures of every run: name → [raw, mvcc] per run. */
const results = new Map<string, [number, number][]>();
/** What an MVCC put of a row wrote, per run: name → [entries, bytes] per put. */
const written = new Map<string, [number, number][]>();

/** Prints a row; `opsPerStep` scales the last compare's CPU per op to the row's unit (rows of a scan). */
function record(name: string, raw: number, mvcc: number, opsPerStep = 1): void {
  const cpu = lastCpu === null ? '' : `   JS-thread CPU µs/op raw ${(lastCpu[0] / opsPerStep).toFixed(1)} mvcc ${(lastCpu[1] / opsPerStep).toFixed(1)}`;
  lastCpu = null;
  console.log(cpu === '' ? row(name, raw, mvcc) : row(name, raw, mvcc).padEnd(122) + cpu);
  let r = results.get(name);
  if (r === undefined) results.set(name, (r = []));
  r.push([raw, mvcc]);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

function row(name: string, raw: number, mvcc: number): string {
  const f = (n: number): string => Math.round(n).toLocaleString('en-US').padStart(12);
  return `${name.padEnd(52)} raw ${f(raw)}/s   mvcc ${f(mvcc)}/s   ratio ${(mvcc / raw).toFixed(2)}${mvcc / raw >= 0.5 ? '' : '   (below the 0.5 target)'}`;
}

async function main(): Promise<void> {
  const dirFlag = process.argv.indexOf('--dir');
  const base = dirFlag >= 0 ? (process.argv[dirFlag + 1] as string) : mkdtempSync(join(tmpdir(), 'cairn-bench-storage-'));
  const rawDir = join(base, 'raw');
  const mvccDir = join(base, 'mvcc');
  const raw = new Level<Buffer, Buffer>(rawDir, { keyEncoding: 'buffer', valueEncoding: 'buffer', cacheSize: 64 << 20, writeBufferSize: 16 << 20 } as never) as unknown as RawDb;
  await raw.open();
  /**
   * Raw writes take the same native path as LevelEngine.write (classic-level's
   * `_batch`). Until session 8 they went through abstract-level's batch(),
   * which clones and checks every op: measured 5.5-8 µs of JS-thread CPU per
   * 1 KB put against 1-2.3 through `_batch` (synced batches of 100, one
   * process, load ~20) — a handicap on the raw side that flattered every
   * MVCC/raw put ratio before.
   */
  const rawBatch = (ops: { type: 'put'; key: Buffer; value: Buffer }[], sync: boolean): Promise<void> =>
    raw._batch !== undefined ? raw._batch(ops, { sync }) : raw.batch(ops, { sync });
  const engine = await LevelEngine.open(mvccDir);
  const rng = new Prng(42);
  let wall = 1_700_000_000_000_000;
  const nextTs = (): Timestamp => ({ wall: ++wall, logical: 0 });
  console.log(`bench/storage: ${KEYS.toLocaleString('en-US')} keys × 1 KB, ${SECONDS} s per measurement, inline value limit ${INLINE_LIMIT}, in ${base}`);

  try {
    let t0 = performance.now();
    for (let i = 0; i < KEYS; i += LOAD_BATCH) {
      const ops: { type: 'put'; key: Buffer; value: Buffer }[] = [];
      for (let j = i; j < Math.min(KEYS, i + LOAD_BATCH); j++) ops.push({ type: 'put', key: userKey(j), value: VALUE });
      await rawBatch(ops, false);
    }
    const rawLoad = KEYS / ((performance.now() - t0) / 1000);
    t0 = performance.now();
    for (let i = 0; i < KEYS; i += LOAD_BATCH) {
      const b = engine.newBatch();
      const ts = nextTs();
      for (let j = i; j < Math.min(KEYS, i + LOAD_BATCH); j++) mvccPut(b, userKey(j), ts, VALUE);
      await engine.write(b);
    }
    const mvccLoad = KEYS / ((performance.now() - t0) / 1000);
    record('load (unsynced, 1000/batch)', rawLoad, mvccLoad);

    const randomKey = (): Buffer => userKey(rng.intn(KEYS));
    /** One synced raw batch of BATCH puts of 1 KB at keys drawn by `key`. */
    const rawSyncedBatch = (key: () => Buffer): Promise<void> => {
      const ops: { type: 'put'; key: Buffer; value: Buffer }[] = new Array(BATCH);
      for (let i = 0; i < BATCH; i++) ops[i] = { type: 'put', key: key(), value: VALUE };
      return rawBatch(ops, true);
    };
    const endKey = userKey(KEYS + 1);
    const readTs = (): Timestamp => ({ wall: wall + 1, logical: 0 });

    /** Point gets and scans; `when` says how much history the keys have. */
    const reads = async (when: string): Promise<void> => {
      const ts = readTs();
      const [rawGet, mvccGetRate] = await compare(
        100,
        () => {
          for (let i = 0; i < 100; i++) if (raw.getSync(randomKey()) === undefined) throw new Error('bench: missing key');
        },
        () => {
          for (let i = 0; i < 100; i++) if (mvccGetSync(engine, randomKey(), ts).value === null) throw new Error('bench: missing key');
        },
      );
      record(readRow('point get (getSync)', when), rawGet, mvccGetRate);
      const [rawScan, mvccScanRate] = await compare(
        1,
        async () => {
          const it = raw.iterator({ gte: userKey(rng.intn(KEYS - 200)), highWaterMarkBytes: 4 << 20 });
          const rows = await it.nextv(100);
          if (rows.length !== 100) throw new Error(`bench: raw scan read ${rows.length} rows`);
          await it.close();
        },
        async () => {
          const r = await mvccScan(engine, userKey(rng.intn(KEYS - 200)), endKey, ts, { maxKeys: 100 });
          if (r.kvs.length !== 100) throw new Error(`bench: MVCC scan read ${r.kvs.length} rows`);
        },
      );
      record(readRow('scan of 100 rows/s', when), rawScan * 100, mvccScanRate * 100, 100);
      // Untimed: what a 100-row MVCC scan reads (raw: one nextv(100), 100 entries), and LevelDB's state.
      const counting = new CountingReader(engine);
      for (let i = 0; i < 20; i++) await mvccScan(counting, userKey(rng.intn(KEYS - 200)), endKey, ts, { maxKeys: 100 });
      const l0 = (p: (n: string) => string): string => p('leveldb.num-files-at-level0');
      console.log(
        `    MVCC scan of 100 rows: ${(counting.calls / 20).toFixed(2)} nextv, ${(counting.entries / 20).toFixed(0)} entries; LevelDB level-0 files raw ${l0((n) => raw.getProperty(n))}, mvcc ${l0((n) => engine.getProperty(n))}`,
      );
    };

    await reads('one version per key');

    // Puts of keys never written before (MVCC: one head per put, no history
    // to move), drawn at random from a range disjoint from the loaded keys.
    let freshCounter = 0;
    const freshKey = (): Buffer => userKey(KEYS + 1 + ((++freshCounter * 2654435761) % FRESH_SPACE));
    /**
     * Synced batches of BATCH puts at keys drawn by `key`: raw beside MVCC.
     * MVCC evaluates as a replica does (src/kv/replica.ts: a batch of at
     * least PREFETCH_MIN_POINT_WRITES point writes reads its heads ahead by
     * one getMany, which LevelEngine splits over the libuv pool), or with
     * `getSyncHeads` one getSync per head during evaluation.
     */
    const putRow = async (name: string, key: () => Buffer, getSyncHeads = false): Promise<void> => {
      // What MVCC writes per put (raw: one entry of key + 1 KB), and process CPU per phase — all threads, so
      // the write phase also holds whatever background compaction (of either store) ran during its fsync.
      let puts = 0;
      let entries = 0;
      let bytes = 0;
      let cpuRead = 0;
      let cpuEval = 0;
      let cpuWrite = 0;
      const rawC0 = compactionMb((n) => raw.getProperty(n));
      const mvccC0 = compactionMb((n) => engine.getProperty(n));
      const poolReads0 = engine.poolReads;
      let rawPuts = 0;
      const [rawRate, mvccRate] = await compare(
        BATCH,
        () => {
          rawPuts += BATCH;
          return rawSyncedBatch(key);
        },
        async () => {
          const b = engine.newBatch();
          const keys = new Array<Buffer>(BATCH);
          for (let i = 0; i < BATCH; i++) keys[i] = key();
          const c0 = processCpuUs();
          if (!getSyncHeads) await mvccPrefetch(b, keys);
          const c1 = processCpuUs();
          for (let i = 0; i < BATCH; i++) mvccPut(b, keys[i] as Buffer, nextTs(), VALUE);
          const c2 = processCpuUs();
          puts += BATCH;
          entries += b.count;
          bytes += b.byteSize;
          await engine.write(b, { sync: true });
          cpuRead += c1 - c0;
          cpuEval += c2 - c1;
          cpuWrite += processCpuUs() - c2;
        },
      );
      record(name, rawRate, mvccRate);
      const poolReads = engine.poolReads - poolReads0;
      let w = written.get(name);
      if (w === undefined) written.set(name, (w = []));
      w.push([entries / puts, bytes / puts]);
      const per = (x: number): string => (x / puts).toFixed(1);
      console.log(`    MVCC per put: ${(entries / puts).toFixed(2)} entries, ${Math.round(bytes / puts)} bytes written (raw 1, ${userKey(0).length + VALUE.length}); process CPU µs: heads read ${per(cpuRead)}, evaluation ${per(cpuEval)}, write + sync ${per(cpuWrite)}`);
      console.log(`    libuv pool jobs per batch of ${BATCH}: raw 1 (the synced write); MVCC ${getSyncHeads ? `1, its heads read by ${BATCH} getSyncs on the JS thread` : `${(poolReads / (puts / BATCH)).toFixed(2)} (the heads: one getMany) + 1`}`);
      printCompaction(rawC0, rawPuts, mvccC0, puts);
    };
    /**
     * LevelDB compaction per 1,000 puts of each store during the last row.
     * Head reads make compaction: LevelDB 1.20 charges a seek to the first
     * table of every Get that probes two or more tables — a bloom-filtered
     * miss too — and compacts a table after max(100, its size / 16 KiB)
     * charges (db/version_set.cc, Version::Get and UpdateStats). Blind raw
     * puts charge none. Compaction of earlier rows still running falls into
     * this one: a figure, not an exact attribution.
     */
    const printCompaction = (rawC0: [number, number], rawPuts: number, mvccC0: [number, number], mvccPuts: number): void => {
      const [rr, rw] = compactionMb((n) => raw.getProperty(n));
      const [mr, mw] = compactionMb((n) => engine.getProperty(n));
      const per = (mb: number, n: number): string => ((mb * 1000) / Math.max(1, n)).toFixed(2);
      console.log(`    LevelDB compaction MB per 1,000 puts, read / written: raw ${per(rr - rawC0[0], rawPuts)} / ${per(rw - rawC0[1], rawPuts)}, mvcc ${per(mr - mvccC0[0], mvccPuts)} / ${per(mw - mvccC0[1], mvccPuts)}`);
    };
    await putRow(FRESH, freshKey);
    // The floor under fresh MVCC puts: raw LevelDB reading the batch's keys
    // by one getMany (one pool job, abstract-level's own) before the same
    // synced write — what every MVCC write's head read costs LevelDB itself
    // (the Gets and the seek compactions they charge), with no MVCC code.
    {
      const [rawBlindFresh, rawReadFresh] = await compare(
        BATCH,
        () => rawSyncedBatch(freshKey),
        async () => {
          const ks = new Array<Buffer>(BATCH);
          for (let i = 0; i < BATCH; i++) ks[i] = freshKey();
          const vs = await raw.getMany(ks);
          for (const v of vs) if (v !== undefined) throw new Error('bench: a fresh key exists');
          const ops: { type: 'put'; key: Buffer; value: Buffer }[] = new Array(BATCH);
          for (let i = 0; i < BATCH; i++) ops[i] = { type: 'put', key: ks[i] as Buffer, value: VALUE };
          return rawBatch(ops, true);
        },
      );
      record(FLOOR_FRESH, rawBlindFresh, rawReadFresh);
    }
    await putRow('put fresh keys, a getSync per head (no prefetch)', freshKey, true);
    await putRow(OVERWRITE, randomKey);
    await putRow('put overwrites, a getSync per head (no prefetch)', randomKey, true);

    // The floor under MVCC overwrites: raw LevelDB writing what an MVCC
    // overwrite writes — two ~1 KB entries per put (the new head and the
    // displaced version) — against one. No MVCC work at all; its ratio
    // bounds what any head-with-value layout can reach.
    const [rawOne, rawTwo] = await compare(
      BATCH,
      () => {
        return rawSyncedBatch(randomKey);
      },
      () => {
        const ops: { type: 'put'; key: Buffer; value: Buffer }[] = new Array(BATCH * 2);
        for (let i = 0; i < BATCH; i++) {
          const k = randomKey();
          ops[2 * i] = { type: 'put', key: k, value: VALUE };
          ops[2 * i + 1] = { type: 'put', key: Buffer.concat([k, VERSION_SUFFIX]), value: VALUE };
        }
        return rawBatch(ops, true);
      },
    );
    record('floor: raw, 2 entries per put (as MVCC overwrite)', rawOne, rawTwo);

    // The other floor: any MVCC write reads the key's head first (intents,
    // write-too-old, stats), and for a loaded key that getSync is a random
    // block read, where a fresh key's miss is answered by the bloom filter.
    const [rawBlind, rawReadFirst] = await compare(
      BATCH,
      () => rawSyncedBatch(randomKey),
      () =>
        rawSyncedBatch(() => {
          const k = randomKey();
          if (raw.getSync(k) === undefined) throw new Error('bench: missing key');
          return k;
        }),
    );
    record(FLOOR_READ, rawBlind, rawReadFirst);

    // Group commit as a store runs it: the next batch is evaluated while the
    // previous one is being synced. Consecutive batches draw keys from
    // disjoint halves of the keyspace, as latches would keep a key's commands
    // apart; each step runs 10 batches and drains.
    const half = Math.floor(KEYS / 2);
    const keysOf = (n: number): Buffer[] => {
      const off = (n % 2) * half;
      const ks = new Array<Buffer>(BATCH);
      for (let i = 0; i < BATCH; i++) ks[i] = userKey(off + rng.intn(half));
      return ks;
    };
    const rawTen =
      (key: () => Buffer = randomKey) =>
      async (): Promise<void> => {
        for (let n = 0; n < 10; n++) await rawSyncedBatch(key);
      };
    /**
     * Ten MVCC batches, each evaluated while the previous one syncs. With
     * `prefetch`, a batch's heads are read by one getMany (libuv pool, off
     * the JS thread) started as the previous batch's write is submitted, so
     * the reads overlap the sync instead of preceding the evaluation.
     */
    const pipelined = (prefetch: boolean, batchKeys: (n: number) => Buffer[] = keysOf) => async (): Promise<void> => {
      let inflight: Promise<void> | null = null;
      let keys = batchKeys(0);
      let b = engine.newBatch();
      let fetched = prefetch ? mvccPrefetch(b, keys) : null;
      for (let n = 0; n < 10; n++) {
        if (fetched !== null) await fetched;
        for (let i = 0; i < BATCH; i++) mvccPut(b, keys[i] as Buffer, nextTs(), VALUE);
        if (inflight !== null) await inflight;
        inflight = engine.write(b, { sync: true });
        if (n < 9) {
          keys = batchKeys(n + 1);
          b = engine.newBatch();
          fetched = prefetch ? mvccPrefetch(b, keys) : null;
        }
      }
      await inflight;
    };
    const [rawPut2, mvccPipelined] = await compare(BATCH * 10, rawTen(), pipelined(false));
    record('put overwrites, next batch evaluated during the sync', rawPut2, mvccPipelined);
    const [rawPut3, mvccPrefetched] = await compare(BATCH * 10, rawTen(), pipelined(true));
    record('… and the next heads prefetched by getMany', rawPut3, mvccPrefetched);
    // Fresh keys as a store writes them: heads prefetched and the batch evaluated during the previous sync, so
    // that MVCC's extra work (the head reads, the evaluation) overlaps the fsync that both sides wait for. Raw
    // has nothing to overlap: both sides keep exactly one synced write in flight.
    const freshKeys = (): Buffer[] => {
      const ks = new Array<Buffer>(BATCH);
      for (let i = 0; i < BATCH; i++) ks[i] = freshKey();
      return ks;
    };
    const [rawPut4, mvccFreshPipelined] = await compare(BATCH * 10, rawTen(freshKey), pipelined(true, freshKeys));
    record(FRESH_PIPELINED, rawPut4, mvccFreshPipelined);

    await reads('after the puts');
    if (COMPACT) {
      // Separates the MVCC cost from LevelDB's state after the writes (level-0 files, pending compaction).
      const lo = Buffer.alloc(0);
      const hi = Buffer.alloc(32, 0xff);
      const t = performance.now();
      await raw.compactRange(lo, hi);
      await engine.compactRange(lo, hi);
      console.log(`    (both stores compacted in ${((performance.now() - t) / 1000).toFixed(1)} s)`);
      await reads('after the puts, both stores compacted');
    }
  } finally {
    await engine.close();
    await raw.close();
    if (dirFlag < 0) rmSync(base, { recursive: true, force: true });
  }
}

for (let run = 1; run <= RUNS; run++) {
  if (RUNS > 1) console.log(`-- run ${run} of ${RUNS}`);
  await main();
}
printMedians();
printCriterion();

function printMedians(): void {
  if (RUNS === 1) return;
  console.log(`-- medians of ${RUNS} runs (ratio: median of the per-run ratios)`);
  for (const [name, rs] of results) {
    const ratio = median(rs.map(([r, m]) => m / r));
    const f = (n: number): string => Math.round(n).toLocaleString('en-US').padStart(12);
    console.log(`${name.padEnd(52)} raw ${f(median(rs.map((x) => x[0])))}/s   mvcc ${f(median(rs.map((x) => x[1])))}/s   ratio ${ratio.toFixed(2)}`);
  }
}

/**
 * Issue 2's criterion, stated plainly: the three MVCC/raw ratios it names
 * (put via synced batches of 100 — of fresh keys —, point get, scan of 100
 * rows, one version per key), each against the 0.5 target; then the
 * overwrite row beside raw LevelDB's own read-before-put floor, which says
 * why overwrites sit near 0.3; and what one put writes.
 */
function printCriterion(): void {
  const ratio = (name: string): number => {
    const rs = results.get(name);
    return rs === undefined ? NaN : median(rs.map(([r, m]) => m / r));
  };
  const wrote = (name: string): string => {
    const w = written.get(name);
    if (w === undefined) return '?';
    return `${median(w.map((x) => x[0])).toFixed(2)} entries, ${Math.round(median(w.map((x) => x[1]))).toLocaleString('en-US')} bytes`;
  };
  const line = (label: string, r: number, note: string): void => console.log(`  ${label.padEnd(46)} ${r.toFixed(2)}   ${note}`);
  const met = (r: number): string => (r >= 0.5 ? 'met (>= 0.5)' : 'NOT met (< 0.5)');
  console.log(`-- issue 2: MVCC within 2x of raw LevelDB (MVCC/raw ratio >= 0.5), ${KEYS.toLocaleString('en-US')} keys x 1 KB, ${RUNS > 1 ? `median of ${RUNS} runs' ratios` : 'one run'}`);
  line('MVCC put, synced batches of 100 (fresh keys)', ratio(FRESH), met(ratio(FRESH)));
  line('MVCC point get (getSync path)', ratio(readRow('point get (getSync)', 'one version per key')), met(ratio(readRow('point get (getSync)', 'one version per key'))));
  line('MVCC scan of 100 rows', ratio(readRow('scan of 100 rows/s', 'one version per key')), met(ratio(readRow('scan of 100 rows/s', 'one version per key'))));
  line('  fresh puts as a store runs them (pipelined)', ratio(FRESH_PIPELINED), 'the next batch read and evaluated while the previous one syncs');
  line('  floor: raw reading fresh keys first', ratio(FLOOR_FRESH), 'raw LevelDB, one getMany of the batch before each synced write, against blind raw puts');
  const ow = ratio(OVERWRITE);
  const floor = ratio(FLOOR_READ);
  line('MVCC put of overwrites', ow, `beside raw LevelDB's own read-before-put floor: ${floor.toFixed(2)}`);
  console.log(
    '    The floor is raw LevelDB reading each loaded key (getSync) before putting it, against blind raw puts. Every MVCC\n' +
      '    write reads the key\'s head first (write-too-old, intents and stats need it; CockroachDB reads too), and an\n' +
      '    overwrite also writes the displaced version (2 entries), so MVCC overwrites sit at or below this floor: 0.5 of\n' +
      '    blind raw puts is within reach only where raw\'s own read-before-put is well above 0.5 (quiet machine, session 8: 0.36).',
  );
  console.log(`  what one put writes: MVCC fresh key ${wrote(FRESH)}; MVCC overwrite ${wrote(OVERWRITE)} (new head, value inline, + the displaced version); raw 1 entry, ${(userKey(0).length + VALUE.length).toLocaleString('en-US')} bytes (the key and the value)`);
}

/**
 * Micro-benchmark of the order-preserving key encoding (storage/encoding):
 * encode and decode of a /Table/<id>/<index>/<int>/<20-byte string> key, the
 * shape of a YCSB primary-key lookup, plus the Raft log key and value
 * varints. Prints ops/s; never asserted.
 *
 *   npm run build && node dist/bench/encoding.js [--seconds 0.5]   (per round; best of 3)
 */
import { KeyReader, KeyWriter, getUvarint, putUvarint } from '../storage/encoding/index.js';
import { appendTableIndexPrefix, decodeTableIndexPrefix, prettyKey, raftLogKey } from '../storage/keys.js';

const secondsAt = process.argv.indexOf('--seconds');
const seconds = secondsAt > 0 ? Number(process.argv[secondsAt + 1]) || 0.5 : 0.5;

/** Best of three rounds: the machines are shared, and the best round is the least disturbed. */
function measure(name: string, fn: (i: number) => void): void {
  for (let i = 0; i < 20_000; i++) fn(i); // warm up the JIT
  let best = 0;
  for (let round = 0; round < 3; round++) {
    let n = 0;
    const start = performance.now();
    const deadline = start + seconds * 1000;
    while (performance.now() < deadline) {
      for (let i = 0; i < 1000; i++) fn(n + i);
      n += 1000;
    }
    best = Math.max(best, n / ((performance.now() - start) / 1000));
  }
  console.log(`${name.padEnd(44)} ${Math.round(best).toLocaleString('en-US').padStart(12)} ops/s`);
}

const strings = Array.from({ length: 1024 }, (_, i) => `user${String(i * 7919).padStart(16, '0')}`); // 20 bytes
const w = new KeyWriter();
let sink = 0;

measure('encode (int, 20-byte string) key', (i) => {
  const k = appendTableIndexPrefix(w, 52, 1)
    .appendInt(i)
    .appendString(strings[i & 1023] as string)
    .finish();
  sink += k.length;
});

const keys = Array.from({ length: 1024 }, (_, i) =>
  Buffer.from(appendTableIndexPrefix(w, 52, 1).appendInt(i * 1_000_003).appendString(strings[i] as string).finish()),
);

measure('decode (int, 20-byte string) key', (i) => {
  const key = keys[i & 1023] as Buffer;
  const p = decodeTableIndexPrefix(key);
  const r = new KeyReader(key, p.next);
  const id = r.readInt() as number;
  const s = r.readString() as string;
  sink += id + s.length;
});

const reader = new KeyReader(keys[0] as Buffer);
measure('decode, one KeyReader reused (reset)', (i) => {
  reader.reset(keys[i & 1023] as Buffer).skip().skip();
  sink += (reader.readInt() as number) + (reader.readString() as string).length;
});

measure('raftLogKey(rangeId, index)', (i) => {
  sink += raftLogKey(17, i).length;
});

const vbuf = Buffer.alloc(16);
measure('uvarint put + get (values < 2^35)', (i) => {
  const n = (i * 2654435761) % 34359738368;
  putUvarint(vbuf, 0, n);
  sink += getUvarint(vbuf, 0).value;
});

measure('prettyKey (debug only)', (i) => {
  sink += prettyKey(keys[i & 1023] as Buffer).length;
});

if (sink === 42) console.log('');

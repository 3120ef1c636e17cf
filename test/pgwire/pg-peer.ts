/**
 * pg-protocol's client-side Parser as the peer that reads our backend bytes.
 * The package exports only its stream-based `parse`, so the Parser class is
 * loaded from its CommonJS build by file path.
 */
import { createRequire } from 'node:module';
import { resolve } from 'node:path';

export interface PeerMessage {
  readonly name: string;
  readonly [field: string]: unknown;
}

interface ParserLike {
  parse(buffer: Buffer, callback: (msg: PeerMessage) => void): void;
}

const require = createRequire(import.meta.url);
const { Parser } = require(resolve('node_modules/pg-protocol/dist/parser.js')) as { Parser: new () => ParserLike };

/** Parses backend bytes delivered as the given chunks into pg-protocol messages. */
export function parseBackend(chunks: Buffer | readonly Buffer[]): PeerMessage[] {
  const parser = new Parser();
  const out: PeerMessage[] = [];
  // NB: the Parser may compact its buffer in place — inside the chunk it was
  // given — so it gets copies, never the caller's bytes.
  for (const c of Array.isArray(chunks) ? chunks : [chunks]) {
    parser.parse(Buffer.from(c as Buffer), (m) => out.push(m instanceof Error ? { ...m, message: m.message } : { ...m }));
  }
  return out;
}

/**
 * The DataRow values of a backend byte stream, byte-exact (pg-protocol's
 * Parser decodes every value as UTF-8, which mangles binary values).
 */
export function rawDataRows(stream: Buffer): (Buffer | null)[][] {
  const rows: (Buffer | null)[][] = [];
  for (let off = 0; off + 5 <= stream.length; ) {
    const type = stream[off]!;
    const len = stream.readInt32BE(off + 1);
    if (type === 0x44) {
      const n = stream.readInt16BE(off + 5);
      let p = off + 7;
      const row: (Buffer | null)[] = [];
      for (let i = 0; i < n; i++) {
        const l = stream.readInt32BE(p);
        p += 4;
        row.push(l < 0 ? null : stream.subarray(p, p + l));
        if (l > 0) p += l;
      }
      rows.push(row);
    }
    off += 1 + len;
  }
  return rows;
}

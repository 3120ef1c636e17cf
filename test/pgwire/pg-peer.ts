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

/**
 * The libpg-query WebAssembly module: loaded once per process, then used
 * synchronously (parseSync, scanSync).
 *
 * Invariant: nothing here or in the rest of sql/parser touches libpg-query
 * before `initParser()` has resolved; doing so is a programming error and
 * raises an AssertionError naming initParser (never a silent WASM crash).
 *
 * Ownership: sql/parser. The server's composition root awaits initParser()
 * at start-up; tests await it in beforeAll.
 */
import { loadModule, scanSync } from 'libpg-query';
import { assert } from '../../src/util/assert.js';

let loaded = false;
let loading: Promise<void> | undefined;

/** Loads the parser's WASM module. Idempotent; safe to call concurrently. */
export function initParser(): Promise<void> {
  if (loaded) return Promise.resolve();
  loading ??= loadModule().then(() => {
    loaded = true;
  });
  return loading;
}

export function isParserLoaded(): boolean {
  return loaded;
}

export function assertParserLoaded(): void {
  assert(loaded, 'parser: libpg-query is not loaded; await initParser() first');
}

/** PostgreSQL keyword categories (kwlist.h), as scanSync reports them. */
export const enum KeywordKind {
  None = 0,
  Unreserved = 1,
  ColName = 2,
  TypeFuncName = 3,
  Reserved = 4,
}

const keywordCache = new Map<string, KeywordKind>();

/** The keyword category of a lower-case word ("select" → Reserved, "x" → None). */
export function keywordKind(word: string): KeywordKind {
  let k = keywordCache.get(word);
  if (k === undefined) {
    assertParserLoaded();
    const toks = scanSync(word).tokens;
    k = toks.length === 1 && toks[0]?.text === word ? ((toks[0].keywordKind ?? 0) as KeywordKind) : KeywordKind.None;
    if (keywordCache.size < 10_000) keywordCache.set(word, k);
  }
  return k;
}

/**
 * StatementCache: SQL text → parsed statements, for the simple query
 * protocol (DESIGN.md §3 "SQL": parse once, cache by text).
 *
 * A bounded LRU over a Map (insertion order = recency: a hit re-inserts the
 * key). Parsed statements are immutable, so every session may share one
 * entry. Errors are not cached: a bad string is parsed again each time (it
 * is cheap to reject and caching it would let garbage evict good entries).
 *
 * Ownership: one cache per server (or per pgwire listener), owned by its
 * creator; not thread-shared (there are no threads).
 */
import { assert } from '../../src/util/assert.js';
import type { ParsedStatement } from './ast.js';
import { parseSql } from './parse.js';

export interface StatementCacheStats {
  readonly hits: number;
  readonly misses: number;
  readonly size: number;
}

export class StatementCache {
  private readonly entries = new Map<string, readonly ParsedStatement[]>();
  private hits = 0;
  private misses = 0;

  /**
   * @param maxEntries bound on cached strings (the least recently used goes first)
   * @param maxTextLength strings longer than this are parsed but never cached
   * @param parse the parser (injectable for tests); parseSql by default
   */
  constructor(
    readonly maxEntries = 1024,
    readonly maxTextLength = 16 * 1024,
    private readonly parse: (text: string) => readonly ParsedStatement[] = parseSql,
  ) {
    assert(maxEntries >= 1, 'StatementCache: maxEntries must be at least 1');
  }

  /** The statements of `text`, parsed at most once while cached. Throws SqlError like parseSql. */
  get(text: string): readonly ParsedStatement[] {
    const hit = this.entries.get(text);
    if (hit !== undefined) {
      this.hits++;
      this.entries.delete(text);
      this.entries.set(text, hit);
      return hit;
    }
    this.misses++;
    const parsed = this.parse(text);
    // Shared between sessions: freeze the list and each statement's top level
    // (the AST types are readonly throughout; a deep freeze would cost a walk).
    for (const p of parsed) Object.freeze(p);
    Object.freeze(parsed);
    if (text.length <= this.maxTextLength) {
      if (this.entries.size >= this.maxEntries) {
        const oldest = this.entries.keys().next().value as string;
        this.entries.delete(oldest);
      }
      this.entries.set(text, parsed);
    }
    return parsed;
  }

  has(text: string): boolean {
    return this.entries.has(text);
  }

  clear(): void {
    this.entries.clear();
  }

  stats(): StatementCacheStats {
    return { hits: this.hits, misses: this.misses, size: this.entries.size };
  }
}

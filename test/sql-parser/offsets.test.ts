/**
 * Offsets and statement splitting: the fast versions against simple ones
 * (STYLE.md "a fast version and a simple version").
 *   - ByteIndex (UTF-8 byte offset → UTF-16 index) against Buffer.byteLength
 *     of every prefix;
 *   - positionOf (PostgreSQL's 1-based code-point position) against spreading
 *     the prefix into code points;
 *   - the Cairn layer's statement splitter (libpg-query's lexer) against
 *     libpg-query's own statement locations, on every string PostgreSQL
 *     parses.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { initParser, parseSql } from '../../sql/parser/index.js';
import { splitStatements } from '../../sql/parser/cairn-statements.js';
import { ByteIndex, pgParse, pgScan, positionOf } from '../../sql/parser/pg-parse.js';

const textArb = fc.string({ unit: fc.oneof(fc.constantFrom('a', ' ', ';', "'", 'é', '€', '😀', '\n'), fc.string({ unit: 'grapheme', maxLength: 1 })), maxLength: 40 });

describe('offsets', () => {
  it('ByteIndex maps the byte offset of every code point boundary to its UTF-16 index', () => {
    fc.assert(
      fc.property(textArb, (text) => {
        const bi = new ByteIndex(text);
        for (let i = 0; i <= text.length; i++) {
          const c = text.charCodeAt(i - 1);
          if (i > 0 && c >= 0xd800 && c <= 0xdbff) continue; // inside a surrogate pair
          expect(bi.toIndex(Buffer.byteLength(text.slice(0, i), 'utf8'))).toBe(i);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('positionOf counts code points, 1-based', () => {
    fc.assert(
      fc.property(textArb, fc.nat(), (text, k) => {
        const i = text.length === 0 ? 0 : k % (text.length + 1);
        const c = text.charCodeAt(i - 1);
        if (i > 0 && c >= 0xd800 && c <= 0xdbff) return;
        expect(positionOf(text, i)).toBe([...text.slice(0, i)].length + 1);
      }),
      { numRuns: 300 },
    );
  });
});

describe('statement splitting', () => {
  let corpus: string[] = [];
  beforeAll(async () => {
    await initParser();
    const dir = join(import.meta.dirname, '../../sql/testdata/parser');
    for (const f of readdirSync(dir).filter((x) => x.endsWith('.txt'))) {
      const lines = readFileSync(join(dir, f), 'utf8').split('\n');
      lines.forEach((l, i) => {
        if (l !== 'parse' && l !== 'split') return;
        const input: string[] = [];
        for (let j = i + 1; j < lines.length && lines[j] !== '----'; j++) input.push(lines[j] as string);
        corpus.push(input.join('\n'));
      });
    }
    corpus = corpus.filter((t) => t.trim() !== '');
  });

  it("the lexer-based splitter agrees with libpg-query's statement locations", () => {
    let compared = 0;
    for (const text of corpus) {
      let pg: number[][];
      try {
        pgParse(text); // PostgreSQL's grammar accepts it (no Cairn layer involved) …
        pg = parseSql(text).map((p) => [p.start, p.end]); // … and Cairn converts it
      } catch {
        continue;
      }
      const ours = splitStatements(text, pgScan(text)).map((s) => [s.start, s.end]);
      // libpg-query's span may end after a trailing comment that the splitter (which skips comments) leaves out.
      expect(ours.map(([s]) => s), text).toEqual(pg.map(([s]) => s));
      ours.forEach(([, e], k) => expect(e, text).toBeLessThanOrEqual((pg[k] as number[])[1] as number));
      compared++;
    }
    expect(compared).toBeGreaterThan(50);
  });
});

/**
 * The WASM module must be loaded before use; using the parser earlier is a
 * programming error that names initParser (pg-query-module.ts). Runs in its
 * own file so the module is fresh.
 */
import { describe, expect, it } from 'vitest';
import { AssertionError } from '../../src/util/assert.js';
import { initParser, isParserLoaded, parseSql } from '../../sql/parser/index.js';

describe('initParser', () => {
  it('fails clearly before initParser, works after, and is idempotent', async () => {
    expect(isParserLoaded()).toBe(false);
    expect(() => parseSql('SELECT 1')).toThrow(AssertionError);
    expect(() => parseSql('SELECT 1')).toThrow(/initParser/);
    await Promise.all([initParser(), initParser()]);
    await initParser();
    expect(isParserLoaded()).toBe(true);
    expect(parseSql('SELECT 1')[0]?.ast.kind).toBe('Select');
  });
});

// src/server/status-server.ts kvResultsJson: the /_admin/kv answer written
// without JSON.stringify for the ok get/put results must be exactly the text
// JSON.stringify({ results }) + "\n" gives (fast version vs the simple one).
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { kvResultsJson, type OpResult } from '../../src/server/status-server.js';

const hexArb = fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('hex'));
const resultArb: fc.Arbitrary<OpResult> = fc.oneof(
  fc.constant<OpResult>({ ok: true }),
  hexArb.map<OpResult>((value) => ({ ok: true, value })),
  fc.constant<OpResult>({ ok: true, value: null }),
  fc.array(fc.tuple(hexArb, hexArb), { maxLength: 4 }).map<OpResult>((rows) => ({ ok: true, rows })),
  fc.record({ code: fc.string(), message: fc.string(), ambiguous: fc.boolean() }).map<OpResult>((e) => ({ ok: false, ...e })),
);

describe('/_admin/kv answer text', () => {
  it('equals JSON.stringify({ results }) + newline (property)', () => {
    fc.assert(
      fc.property(fc.array(resultArb, { maxLength: 8 }), (results) => {
        expect(kvResultsJson(results)).toBe(`${JSON.stringify({ results })}\n`);
      }),
      { numRuns: 500 },
    );
  });
});

// PostgreSQL's array_in trims only ASCII white space around unquoted elements; other
// Unicode spaces are element text (found by the text round-trip property: [" "]).
import { describe, expect, it } from 'vitest';
import { decodeText, encodeText } from '../../sql/types/text-format.js';
import { T, arrayOf } from '../../sql/types/type.js';

describe('text[] with non-ASCII spaces', () => {
  it('round-trips elements that are or contain Unicode spaces', () => {
    const t = arrayOf(T.text);
    for (const v of [['\u00a0'], ['\u2028'], ['\u3000x\u00a0'], ['\ufeff']]) {
      expect(decodeText(encodeText(v, t), t)).toEqual(v);
    }
    expect(decodeText('{ a , b }', t)).toEqual(['a', 'b']);
  });
});

/**
 * Random field values, as YCSB's RandomByteIterator: each character is
 * ' ' + a 6-bit random value, i.e. printable ASCII 0x20–0x5f (it includes
 * the quote and backslash, so literal inlining must escape). Five characters
 * are drawn from each 32-bit Prng output.
 */
import type { Prng } from '../../util/prng.js';

export const FIELD_COUNT = 10;
export const FIELD_LENGTH = 100;

export class FieldGenerator {
  private readonly codes: number[];

  constructor(
    private readonly rng: Prng,
    readonly length: number = FIELD_LENGTH,
  ) {
    this.codes = new Array<number>(length).fill(0);
  }

  /** One random value of `length` printable characters. */
  value(): string {
    const codes = this.codes;
    let bits = 0;
    let left = 0;
    for (let i = 0; i < codes.length; i++) {
      if (left === 0) {
        bits = this.rng.nextUint32();
        left = 5;
      }
      codes[i] = 0x20 + (bits & 63);
      bits >>>= 6;
      left--;
    }
    return String.fromCharCode.apply(null, codes);
  }

  /** FIELD_COUNT values, for an insert. */
  values(): string[] {
    const out: string[] = new Array<string>(FIELD_COUNT);
    for (let i = 0; i < FIELD_COUNT; i++) out[i] = this.value();
    return out;
  }

  /** A field index in [0, FIELD_COUNT): which field an update rewrites. */
  fieldIndex(): number {
    return this.rng.intn(FIELD_COUNT);
  }
}

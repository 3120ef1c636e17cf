/**
 * Generators of hostile frontend byte streams for the fuzz properties (the
 * issue: "random and mutated frontend byte streams never crash the server or
 * leak a session; each malformed message gets an ErrorResponse (08P01) and a
 * close"), and an oracle that says what a correct server must do with one.
 */
import fc from 'fast-check';
import { serialize } from 'pg-protocol';
import { FrontendDecoder } from '../../sql/pgwire/frontend.js';

/** A valid normal-phase conversation to mutate. */
export const VALID_CONVERSATION: Buffer = Buffer.concat([
  serialize.query('select 1; select * from t'),
  serialize.parse({ name: 's', text: 'select * from t where id = $1' }),
  serialize.bind({ statement: 's', values: ['1'] }),
  serialize.describe({ type: 'P' }),
  serialize.execute({ rows: 1 }),
  serialize.close({ type: 'S', name: 's' }),
  serialize.sync(),
  serialize.flush(),
]);

/** Random bytes, the valid conversation with a few bytes changed, or cut and followed by a bad header. */
export function fuzzStreams(valid: Buffer = VALID_CONVERSATION): fc.Arbitrary<Buffer> {
  return fc.oneof(
    fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)),
    fc.array(fc.tuple(fc.nat(valid.length - 1), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }).map((muts) => {
      const b = Buffer.from(valid);
      for (const [at, v] of muts) b[at] = v;
      return b;
    }),
    fc.nat(valid.length).map((cut) => Buffer.concat([valid.subarray(0, cut), Buffer.from([0x51, 0xff, 0xff, 0xff, 0xff])])),
  );
}

/**
 * What a reference decoder says about a stream fed in the given phase:
 * 'violation' if it breaks the protocol before anything that ends or
 * changes the conversation, 'ends' if a Terminate/CancelRequest/startup
 * packet comes first (the outcome then depends on what follows), 'fine'.
 */
export function oracle(bytes: Buffer, startupPhase: boolean): 'violation' | 'ends' | 'fine' {
  const d = new FrontendDecoder();
  if (!startupPhase) d.startNormalPhase();
  d.push(bytes);
  try {
    for (let m = d.next(); m !== undefined; m = d.next()) {
      switch (m.kind) {
        case 'password':
          return 'violation'; // well-formed, but never valid after authentication
        case 'terminate':
        case 'cancelRequest':
        case 'startup':
        case 'sslRequest':
        case 'gssEncRequest':
          return 'ends';
        default:
          break;
      }
    }
  } catch {
    return 'violation';
  }
  return 'fine';
}

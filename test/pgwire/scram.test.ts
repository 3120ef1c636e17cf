// SCRAM-SHA-256 server side: RFC 7677 §3's exchange as a golden vector, pg's
// client-side SCRAM as the peer, the PostgreSQL credential text form, and
// malformed messages (RFC 5802 §7 grammar).
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import {
  ScramServerExchange,
  formatScramCredential,
  makeScramCredential,
  parseScramCredential,
  saslPrep,
  verifyScramPassword,
} from '../../sql/pgwire/scram.js';
import { ProtocolViolationError } from '../../sql/pgwire/errors.js';
import { isCairnError } from '../../src/util/index.js';

interface PgScramSession {
  response: string;
}
const require = createRequire(import.meta.url);
const pgSasl = require(resolve('node_modules/pg/lib/crypto/sasl.js')) as {
  startSession(mechanisms: string[], stream?: unknown): PgScramSession;
  continueSession(session: PgScramSession, password: string, serverData: string, stream?: unknown): Promise<void>;
  finalizeSession(session: PgScramSession, serverData: string): void;
};

// RFC 7677 §3: user "user", password "pencil".
const RFC = {
  salt: Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64'),
  clientFirst: 'n,,n=user,r=rOprNGfwEbeRWgbNEkqO',
  serverNonce: '%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0',
  serverFirst: 'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096',
  clientFinal: 'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=',
  serverFinal: 'v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=',
};

/** Runs pg's client against our server exchange; resolves to whether both sides accepted. */
async function pgExchange(password: string, credential: ReturnType<typeof makeScramCredential> | undefined, nonce = 'c2VydmVyTm9uY2U='): Promise<boolean> {
  const server = new ScramServerExchange(credential, nonce, 'someone');
  const client = pgSasl.startSession(['SCRAM-SHA-256']);
  const serverFirst = server.handleClientFirst(client.response);
  await pgSasl.continueSession(client, password, serverFirst);
  const result = server.handleClientFinal(client.response);
  if (!result.ok) return false;
  pgSasl.finalizeSession(client, result.serverFinal); // throws if our signature is wrong
  return true;
}

describe('SCRAM-SHA-256 server exchange', () => {
  const rfcCredential = makeScramCredential('pencil', RFC.salt, 4096);

  it('reproduces RFC 7677 §3 exactly', () => {
    const ex = new ScramServerExchange(rfcCredential, RFC.serverNonce);
    expect(ex.handleClientFirst(RFC.clientFirst)).toBe(RFC.serverFirst);
    expect(ex.handleClientFinal(RFC.clientFinal)).toEqual({ ok: true, serverFinal: RFC.serverFinal });
  });

  it('rejects the RFC proof under another password', () => {
    const ex = new ScramServerExchange(makeScramCredential('pencil2', RFC.salt, 4096), RFC.serverNonce);
    ex.handleClientFirst(RFC.clientFirst);
    expect(ex.handleClientFinal(RFC.clientFinal)).toEqual({ ok: false });
  });

  it("authenticates pg's SCRAM client with the right password and refuses a wrong one", async () => {
    const cred = makeScramCredential('s3cret', Buffer.from('0123456789abcdef'), 4096);
    expect(await pgExchange('s3cret', cred)).toBe(true);
    expect(await pgExchange('s3cret ', cred)).toBe(false);
  });

  it('agrees with pg on any password, including SASLprep-mapped ones (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ minLength: 1, maxLength: 12, unit: 'grapheme' }), fc.uint8Array({ minLength: 8, maxLength: 16 }), async (pw, salt) => {
        const cred = makeScramCredential(pw, Buffer.from(salt), 16);
        expect(await pgExchange(pw, cred)).toBe(true);
      }),
      { numRuns: 40 },
    );
    // U+00A0 maps to a space and U+00AD to nothing (RFC 4013 §2.1, §2.2).
    expect(saslPrep('a\u00a0b\u00adc')).toBe('a bc');
  });

  it('runs a mock exchange for an unknown user and always fails it', async () => {
    expect(await pgExchange('anything', undefined)).toBe(false);
    const a = new ScramServerExchange(undefined, 'n1', 'ghost').handleClientFirst('n,,n=*,r=abc');
    const b = new ScramServerExchange(undefined, 'n1', 'ghost').handleClientFirst('n,,n=*,r=abc');
    expect(a).toBe(b); // the same fake salt each time: nothing reveals the user is unknown
  });

  it('rejects malformed messages with 08P01', () => {
    const first = (msg: string) => () => new ScramServerExchange(rfcCredential, 'x').handleClientFirst(msg);
    for (const bad of ['', 'n', 'n,', 'x,,n=*,r=a', 'p=tls-server-end-point,,n=*,r=a', 'n,a=admin,n=*,r=a', 'n,,r=a', 'n,,n=*', 'n,,m=ext,n=*,r=a']) {
      expect(first(bad), bad).toThrow(ProtocolViolationError);
    }
    const final = (msg: string) => () => {
      const ex = new ScramServerExchange(rfcCredential, RFC.serverNonce);
      ex.handleClientFirst(RFC.clientFirst);
      return ex.handleClientFinal(msg);
    };
    const nonce = 'rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0';
    for (const bad of [
      '',
      `c=biws,r=${nonce}`,
      `c=biws,r=wrongnonce,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=`,
      `c=eSws,r=${nonce},p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=`,
      `c=biws,r=${nonce},p=!!!!`,
      `c=biws,r=${nonce},p=AAAA`,
      `r=${nonce},c=biws,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=`,
    ]) {
      expect(final(bad), bad).toThrow(ProtocolViolationError);
    }
    const ex = new ScramServerExchange(rfcCredential, 'x');
    expect(() => ex.handleClientFinal(RFC.clientFinal)).toThrow(ProtocolViolationError); // out of order
  });

  it('never throws anything but a ProtocolViolationError on random client messages (property)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), fc.string({ maxLength: 120 }), (a, b) => {
        const ex = new ScramServerExchange(rfcCredential, 'nonce');
        try {
          ex.handleClientFirst(a);
          expect(ex.handleClientFinal(b).ok).toBe(false);
        } catch (e) {
          expect(e).toBeInstanceOf(ProtocolViolationError);
        }
      }),
      { numRuns: 1000 },
    );
  });
});

describe('stored SCRAM credentials', () => {
  it('round-trips the PostgreSQL text form', () => {
    const c = makeScramCredential('pencil', RFC.salt, 4096);
    const text = formatScramCredential(c);
    expect(text).toMatch(/^SCRAM-SHA-256\$4096:W22ZaJ0SNY7soEsUEjb6gQ==\$[A-Za-z0-9+/]{43}=:[A-Za-z0-9+/]{43}=$/);
    expect(parseScramCredential(text)).toEqual(c);
  });

  it('rejects malformed text forms with a typed error', () => {
    for (const bad of [
      'md5abcdef',
      'SCRAM-SHA-256$4096:c2FsdA==$AAAA:AAAA',
      'SCRAM-SHA-256$0:c2FsdA==$' + 'A'.repeat(43) + '=:' + 'A'.repeat(43) + '=',
      'SCRAM-SHA-256$4096:c2Fsd!==$' + 'A'.repeat(43) + '=:' + 'A'.repeat(43) + '=',
      'SCRAM-SHA-256$x:c2FsdA==$a:b',
    ]) {
      let err: unknown;
      try {
        parseScramCredential(bad);
      } catch (e) {
        err = e;
      }
      expect(isCairnError(err), bad).toBe(true);
    }
  });

  it('verifies cleartext passwords against a credential', async () => {
    const c = makeScramCredential('pencil', RFC.salt, 64);
    expect(await verifyScramPassword('pencil', c)).toBe(true);
    expect(await verifyScramPassword('Pencil', c)).toBe(false);
    expect(await verifyScramPassword('pencil', undefined)).toBe(false);
  });
});

/**
 * SCRAM-SHA-256, server side (RFC 5802, RFC 7677; PostgreSQL docs §55.3.1).
 *
 * Stored credential — what `CREATE USER … PASSWORD` keeps, never the password:
 *
 *   SaltedPassword = PBKDF2-HMAC-SHA-256(password, salt, iterations, 32)
 *   StoredKey      = SHA-256(HMAC(SaltedPassword, "Client Key"))
 *   ServerKey      = HMAC(SaltedPassword, "Server Key")
 *
 * and its text form, the same as PostgreSQL's pg_authid.rolpassword:
 *
 *   SCRAM-SHA-256$<iterations>:<base64 salt>$<base64 StoredKey>:<base64 ServerKey>
 *
 * The exchange (one ScramServerExchange per authentication attempt):
 *
 *   client-first  "n,,n=<user>,r=<client nonce>"        (gs2 header "n,," or "y,,")
 *   server-first  "r=<client nonce><server nonce>,s=<salt>,i=<iterations>"
 *   client-final  "c=<base64 gs2 header>,r=<nonce>,p=<base64 ClientProof>"
 *   server-final  "v=<base64 ServerSignature>"
 *
 *   AuthMessage     = client-first-bare "," server-first "," client-final-without-proof
 *   ClientSignature = HMAC(StoredKey, AuthMessage)
 *   the proof is right iff SHA-256(ClientProof XOR ClientSignature) = StoredKey
 *   ServerSignature = HMAC(ServerKey, AuthMessage)
 *
 * Decisions:
 *   - The user name inside client-first is ignored, as in PostgreSQL: the
 *     startup packet's user is authoritative (libpq and pg send "n=*").
 *   - Channel binding (SCRAM-SHA-256-PLUS) is not offered; a client asking for
 *     it ("p=…") is refused.
 *   - An unknown user runs a mock exchange with a salt derived from the user
 *     name, so that the failure looks like a wrong password and does not
 *     reveal which users exist (PostgreSQL does the same).
 *   - Passwords go through the mapping steps of SASLprep (RFC 4013 §2.1–2.2:
 *     non-ASCII spaces → U+0020, RFC 3454 table B.1 removed, NFKC), as libpq
 *     and pg do; the prohibition and bidi checks are skipped (PostgreSQL
 *     falls back to the raw password in those cases anyway).
 *   - The server nonce comes from an injected source (tests pass a fixed one).
 *
 * Errors: malformed messages raise ProtocolViolationError (08P01); a wrong
 * proof is not an exception but `{ ok: false }`, which the connection turns
 * into 28P01.
 */
import { createHash, createHmac, pbkdf2, pbkdf2Sync, timingSafeEqual } from 'node:crypto';
import { assert, CairnError } from '../../src/util/index.js';
import { ProtocolViolationError } from './errors.js';

export const SCRAM_SHA_256 = 'SCRAM-SHA-256';
/** PostgreSQL's default scram_iterations. */
export const DEFAULT_SCRAM_ITERATIONS = 4096;

export interface ScramCredential {
  readonly iterations: number;
  readonly salt: Buffer;
  readonly storedKey: Buffer;
  readonly serverKey: Buffer;
}

function hmac(key: Buffer, data: string | Buffer): Buffer {
  return createHmac('sha256', key).update(data).digest();
}

function sha256(data: Buffer): Buffer {
  return createHash('sha256').update(data).digest();
}

/** RFC 3454 table C.1.2: non-ASCII space characters. */
const NON_ASCII_SPACE_RE = /[\u00A0\u1680\u2000-\u200B\u202F\u205F\u3000]/g;
/** RFC 3454 table B.1: characters commonly mapped to nothing. */
const MAPPED_TO_NOTHING_RE = /[\u00AD\u034F\u1806\u180B-\u180D\u200C\u200D\u2060\uFE00-\uFE0F\uFEFF]/gu;

/** The mapping and normalisation steps of SASLprep (RFC 4013 §2.1, §2.2). */
export function saslPrep(password: string): string {
  return password.replace(NON_ASCII_SPACE_RE, ' ').replace(MAPPED_TO_NOTHING_RE, '').normalize('NFKC');
}

/** Derives the stored credential for a password (CREATE USER … PASSWORD). */
export function makeScramCredential(password: string, salt: Buffer, iterations = DEFAULT_SCRAM_ITERATIONS): ScramCredential {
  const salted = pbkdf2Sync(saslPrep(password), salt, iterations, 32, 'sha256');
  return {
    iterations,
    salt,
    storedKey: sha256(hmac(salted, 'Client Key')),
    serverKey: hmac(salted, 'Server Key'),
  };
}

/**
 * Checks a cleartext password (PasswordMessage over TLS) against a stored
 * credential. The key derivation runs on the libuv pool, off the event loop.
 */
export function verifyScramPassword(password: string, c: ScramCredential | undefined): Promise<boolean> {
  const salt = c?.salt ?? Buffer.alloc(16);
  const iterations = c?.iterations ?? DEFAULT_SCRAM_ITERATIONS;
  return new Promise((resolve) => {
    pbkdf2(saslPrep(password), salt, iterations, 32, 'sha256', (err, salted) => {
      if (err || c === undefined) return resolve(false);
      resolve(timingSafeEqual(sha256(hmac(salted, 'Client Key')), c.storedKey));
    });
  });
}

/** The PostgreSQL text form of a credential. */
export function formatScramCredential(c: ScramCredential): string {
  return `${SCRAM_SHA_256}$${c.iterations}:${c.salt.toString('base64')}$${c.storedKey.toString('base64')}:${c.serverKey.toString('base64')}`;
}

const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/;

function base64Field(s: string | undefined, what: string): Buffer {
  if (s === undefined || !BASE64_RE.test(s) || s.length % 4 !== 0) {
    throw new CairnError('pgwire.invalid_scram_credential', `pgwire: invalid ${what} in SCRAM credential`, { sqlState: '22023' });
  }
  return Buffer.from(s, 'base64');
}

/** Parses `SCRAM-SHA-256$<iter>:<salt>$<StoredKey>:<ServerKey>`. */
export function parseScramCredential(text: string): ScramCredential {
  const m = /^SCRAM-SHA-256\$(\d{1,9}):([^$:]+)\$([^$:]+):([^$:]+)$/.exec(text);
  if (!m) throw new CairnError('pgwire.invalid_scram_credential', 'pgwire: not a SCRAM-SHA-256 credential', { sqlState: '22023' });
  const iterations = Number(m[1]);
  if (iterations < 1) throw new CairnError('pgwire.invalid_scram_credential', 'pgwire: SCRAM iterations must be positive', { sqlState: '22023' });
  const storedKey = base64Field(m[3], 'StoredKey');
  const serverKey = base64Field(m[4], 'ServerKey');
  if (storedKey.length !== 32 || serverKey.length !== 32) {
    throw new CairnError('pgwire.invalid_scram_credential', 'pgwire: SCRAM keys must be 32 bytes', { sqlState: '22023' });
  }
  return { iterations, salt: base64Field(m[2], 'salt'), storedKey, serverKey };
}

/** Splits "a=…,b=…" into attributes, checking the expected order of names. */
function attributes(msg: string, names: readonly string[], what: string): string[] {
  const parts = msg.split(',');
  if (parts.length < names.length) throw malformed(what);
  const out: string[] = [];
  for (let i = 0; i < names.length; i++) {
    const p = parts[i]!;
    if (p.length < 2 || p[0] !== names[i] || p[1] !== '=') throw malformed(what);
    out.push(p.slice(2));
  }
  return out;
}

function malformed(what: string): ProtocolViolationError {
  return new ProtocolViolationError(`malformed SCRAM message (${what})`);
}

/** A printable nonce: RFC 5802 excludes ',' and requires printable ASCII. */
const NONCE_RE = /^[\x21-\x2b\x2d-\x7e]+$/;

export type ScramFinalResult = { readonly ok: true; readonly serverFinal: string } | { readonly ok: false };

export class ScramServerExchange {
  private state: 'client-first' | 'client-final' | 'done' = 'client-first';
  private clientFirstBare = '';
  private serverFirst = '';
  private nonce = '';
  private gs2Header = '';
  private readonly credential: ScramCredential;
  private readonly mock: boolean;

  /**
   * @param credential the user's stored credential, or undefined to run a
   *        mock exchange that always fails (unknown user).
   * @param serverNonce printable nonce (no ','), e.g. 18 random bytes in base64.
   * @param mockSeed a stable per-user string for the mock exchange's salt.
   */
  constructor(credential: ScramCredential | undefined, private readonly serverNonce: string, mockSeed = '') {
    this.mock = credential === undefined;
    this.credential = credential ?? {
      iterations: DEFAULT_SCRAM_ITERATIONS,
      salt: sha256(Buffer.from(`cairn-mock-salt:${mockSeed}`)).subarray(0, 16),
      storedKey: Buffer.alloc(32),
      serverKey: Buffer.alloc(32),
    };
  }

  /** Consumes client-first-message, returns server-first-message. */
  handleClientFirst(message: string): string {
    if (this.state !== 'client-first') throw malformed('unexpected client-first-message');
    // gs2-header = cbind-flag "," [authzid] ","
    const c1 = message.indexOf(',');
    const c2 = c1 < 0 ? -1 : message.indexOf(',', c1 + 1);
    if (c2 < 0) throw malformed('gs2 header');
    const flag = message.slice(0, c1);
    if (flag.startsWith('p=')) throw malformed('channel binding is not supported');
    if (flag !== 'n' && flag !== 'y') throw malformed('gs2 cbind flag');
    if (c2 !== c1 + 1) throw malformed('authzid is not supported');
    this.gs2Header = message.slice(0, c2 + 1);
    this.clientFirstBare = message.slice(c2 + 1);
    if (this.clientFirstBare.startsWith('m=')) throw malformed('extensions are not supported');
    const [, clientNonce] = attributes(this.clientFirstBare, ['n', 'r'], 'client-first-message');
    if (!NONCE_RE.test(clientNonce!)) throw malformed('client nonce');
    assert(NONCE_RE.test(this.serverNonce), 'pgwire: SCRAM server nonce must be printable and without commas');
    this.nonce = clientNonce! + this.serverNonce;
    this.serverFirst = `r=${this.nonce},s=${this.credential.salt.toString('base64')},i=${this.credential.iterations}`;
    this.state = 'client-final';
    return this.serverFirst;
  }

  /** Consumes client-final-message; ok with server-final-message iff the proof is right. */
  handleClientFinal(message: string): ScramFinalResult {
    if (this.state !== 'client-final') throw malformed('unexpected client-final-message');
    this.state = 'done';
    const [channel, nonce] = attributes(message, ['c', 'r'], 'client-final-message');
    const proofAt = message.lastIndexOf(',p=');
    if (proofAt < 0) throw malformed('client proof');
    const withoutProof = message.slice(0, proofAt);
    const proofB64 = message.slice(proofAt + 3);
    if (!BASE64_RE.test(proofB64) || proofB64.length % 4 !== 0) throw malformed('client proof');
    const proof = Buffer.from(proofB64, 'base64');
    if (proof.length !== 32) throw malformed('client proof length');
    if (channel !== Buffer.from(this.gs2Header).toString('base64')) throw malformed('channel binding data');
    if (nonce !== this.nonce) throw malformed('nonce');
    const authMessage = `${this.clientFirstBare},${this.serverFirst},${withoutProof}`;
    const clientSignature = hmac(this.credential.storedKey, authMessage);
    const clientKey = Buffer.allocUnsafe(32);
    for (let i = 0; i < 32; i++) clientKey[i] = proof[i]! ^ clientSignature[i]!;
    const ok = timingSafeEqual(sha256(clientKey), this.credential.storedKey) && !this.mock;
    if (!ok) return { ok: false };
    return { ok: true, serverFinal: `v=${hmac(this.credential.serverKey, authMessage).toString('base64')}` };
  }
}

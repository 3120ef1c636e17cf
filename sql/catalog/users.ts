/**
 * sql/catalog/users.ts — SQL users and their SCRAM credentials.
 *
 * Stored at namespaceKey(USERS_PARENT_ID, name) → the credential's PostgreSQL
 * text form (`SCRAM-SHA-256$…`, scram.ts), or an empty-marker value "-" for a
 * user without a password (who can then never log in with a password).
 * `root` always exists: its credential comes from the server's options
 * (RootPassword) and is never stored; CREATE/ALTER/DROP of root is refused.
 *
 * The user names are part of the catalog snapshot (catalog.ts loadSnapshot
 * scans USERS_SPAN beside the descriptors; pg_roles lists them), so CREATE
 * and DROP USER bump the schema version.
 *
 * Ownership: the session calls these inside its transaction; the pgwire
 * SessionFactory calls lookupUser in a fresh read-only transaction per
 * connection attempt.
 */
import { randomBytes } from 'node:crypto';
import { namespaceKey, NAMESPACE_PREFIX } from '../../storage/keys.js';
import { makeScramCredential, parseScramCredential, formatScramCredential, type ScramCredential } from '../pgwire/scram.js';
import { KVBatch, type KVTxn } from '../kv.js';
import { SqlError } from '../parser/sql-error.js';
import { USERS_PARENT_ID } from './descriptor.js';
import { bumpSchemaVersion } from './catalog.js';
import { KeyReader, KeyWriter, prefixEnd } from '../../storage/encoding/index.js';

export const ROOT_USER = 'root';
const NO_PASSWORD = Buffer.from('-');

export type UserLookup = { readonly exists: false } | { readonly exists: true; readonly credential: ScramCredential | undefined };

export async function lookupUser(txn: KVTxn, name: string): Promise<UserLookup> {
  const b = new KVBatch();
  b.get(namespaceKey(USERS_PARENT_ID, name));
  const [r] = await txn.run(b);
  const v = r?.kind === 'get' ? r.value : null;
  if (v === null) return { exists: false };
  if (v.equals(NO_PASSWORD)) return { exists: true, credential: undefined };
  return { exists: true, credential: parseScramCredential(v.toString('utf8')) };
}

function refuseRoot(name: string): void {
  if (name === ROOT_USER) throw new SqlError('sql.reserved_role', '42939', `role name "${ROOT_USER}" is reserved`);
}

function credentialValue(password: string | null | undefined): Buffer {
  if (password === null || password === undefined) return NO_PASSWORD;
  return Buffer.from(formatScramCredential(makeScramCredential(password, randomBytes(16))), 'utf8');
}

export async function createUser(txn: KVTxn, name: string, password: string | null | undefined, ifNotExists: boolean): Promise<void> {
  refuseRoot(name);
  const existing = await lookupUser(txn, name);
  if (existing.exists) {
    if (ifNotExists) return;
    throw new SqlError('sql.duplicate_object', '42710', `role "${name}" already exists`);
  }
  const b = new KVBatch();
  b.put(namespaceKey(USERS_PARENT_ID, name), credentialValue(password));
  await txn.run(b);
  await bumpSchemaVersion(txn);
}

export async function alterUser(txn: KVTxn, name: string, password: string | null | undefined): Promise<void> {
  refuseRoot(name);
  const existing = await lookupUser(txn, name);
  if (!existing.exists) throw new SqlError('sql.undefined_object', '42704', `role "${name}" does not exist`);
  if (password === undefined) return;
  const b = new KVBatch();
  b.put(namespaceKey(USERS_PARENT_ID, name), credentialValue(password));
  await txn.run(b);
}

export async function dropUser(txn: KVTxn, name: string, ifExists: boolean): Promise<void> {
  refuseRoot(name);
  const existing = await lookupUser(txn, name);
  if (!existing.exists) {
    if (ifExists) return;
    throw new SqlError('sql.undefined_object', '42704', `role "${name}" does not exist`);
  }
  const b = new KVBatch();
  b.del(namespaceKey(USERS_PARENT_ID, name));
  await txn.run(b);
  await bumpSchemaVersion(txn);
}

const USERS_PREFIX = new KeyWriter().appendRaw(NAMESPACE_PREFIX).appendInt(USERS_PARENT_ID).finish();
/** The key span holding every stored user. */
export const USERS_SPAN: { readonly start: Buffer; readonly end: Buffer } = { start: USERS_PREFIX, end: prefixEnd(USERS_PREFIX) };

/** The user names of the rows of a scan over USERS_SPAN, in key (= name) order. */
export function userNames(rows: readonly { readonly key: Buffer }[]): string[] {
  const reader = new KeyReader(Buffer.alloc(0));
  return rows.map((row) => reader.reset(row.key, USERS_PREFIX.length).readString() as string);
}

/** Every stored user name (root not included), sorted. */
export async function listUsers(txn: KVTxn): Promise<string[]> {
  const b = new KVBatch();
  b.scan(USERS_SPAN.start, USERS_SPAN.end);
  const [r] = await txn.run(b);
  return r?.kind === 'scan' ? userNames(r.rows) : [];
}

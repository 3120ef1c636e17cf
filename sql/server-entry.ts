/**
 * sql/server-entry.ts — mounts the SQL layer on a node's KVDB.
 *
 *   const sql = await createSqlServer(kvdb, { insecure, rootPassword });
 *   net.createServer((sock) => handlePgConnection(sock, { factory: sql.factory,
 *                                                         cancelRegistry }))
 *
 * Owns the node-wide pieces every session shares: the descriptor cache
 * (Catalog), the descriptor leases (LeaseManager, when the KV transactions
 * support commit deadlines — the real TxnDB; its tick runs until close()),
 * the statement cache, and the node services expressions use
 * (unique_rowid, gen_random_uuid, random). It bootstraps the system
 * descriptors (idempotent) before returning.
 *
 * Authentication: `insecure` → trust for everyone; otherwise SCRAM-SHA-256
 * against the users stored by CREATE USER (users.ts), and for `root` against
 * the credential made from `rootPassword` (the server's option or env var;
 * without one, root cannot log in with a password). Unknown database → 3D000
 * at startup.
 *
 * Timers (statement_timeout) and randomness are injected with defaults.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { KVDB } from './kv.js';
import { Catalog } from './catalog/catalog.js';
import { lookupUser, ROOT_USER } from './catalog/users.js';
import { StatementCache } from './parser/statement-cache.js';
import { initParser } from './parser/pg-query-module.js';
import { PgError } from './pgwire/errors.js';
import { makeScramCredential, type ScramCredential } from './pgwire/scram.js';
import type { AuthMethod, SessionFactory, StartupInfo } from './pgwire/session-backend.js';
import type { NodeServices } from './sem/expr.js';
import { Session, type SessionDeps } from './session/session.js';
import { loadSnapshot } from './catalog/catalog.js';
import { LeaseManager, type LeaseManagerOptions } from './catalog/lease-manager.js';

export interface SqlServerOptions {
  /** Trust authentication for every user (cairn start --insecure). */
  readonly insecure?: boolean;
  /** root's password (cairn start flag or env var); root has no password without it. */
  readonly rootPassword?: string;
  readonly timers?: SessionDeps['timers'];
  readonly randomUUID?: () => string;
  readonly random?: () => number;
  readonly statementCacheSize?: number;
  /**
   * Descriptor leases: false turns them off; options tune them (tests). Default:
   * on when the KVDB's transactions have setDeadline.
   */
  readonly descriptorLeases?: false | Omit<LeaseManagerOptions, 'sleep' | 'schedule'>;
}

export interface SqlServer {
  readonly factory: SessionFactory;
  readonly catalog: Catalog;
  readonly statementCache: StatementCache;
  /** The node's descriptor leases, when on. */
  readonly leases: LeaseManager | undefined;
  /** Sessions currently open. */
  sessionCount(): number;
  /** Stops the background work (the lease tick); sessions are the listener's to close. */
  close(): void;
}

/** unique_rowid(): (µs since epoch / 10) << 15 | node id, strictly increasing per node. */
export function makeUniqueRowid(db: KVDB): () => bigint {
  let last = 0n;
  const node = BigInt(db.nodeId & 0x7fff);
  return () => {
    let v = (BigInt(Math.floor(db.now().wall / 10)) << 15n) | node;
    if (v <= last) v = last + (1n << 15n);
    last = v;
    return v;
  };
}

export async function createSqlServer(db: KVDB, opts: SqlServerOptions = {}): Promise<SqlServer> {
  await initParser();
  const catalog = new Catalog(db);
  await catalog.bootstrap();
  const statementCache = new StatementCache(opts.statementCacheSize ?? 1024);
  const node: NodeServices = {
    nodeId: db.nodeId,
    uniqueRowid: makeUniqueRowid(db),
    randomUUID: opts.randomUUID ?? randomUUID,
    random: opts.random ?? Math.random,
  };
  const timers = opts.timers ?? { setTimeout: (fn, ms) => setTimeout(fn, ms), clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout) };
  const leaseOpts = opts.descriptorLeases;
  const leases =
    leaseOpts !== false && typeof db.newTxn({ readOnly: true }).setDeadline === 'function'
      ? new LeaseManager(db, catalog, {
          ...leaseOpts,
          sleep: (ms) => new Promise((r) => timers.setTimeout(r, ms)),
          schedule: (fn, ms) => {
            const h = timers.setTimeout(fn, ms);
            (h as { unref?: () => void }).unref?.();
            return () => timers.clearTimeout(h);
          },
        })
      : undefined;
  leases?.start();
  const deps: SessionDeps = {
    db,
    catalog,
    node,
    statementCache,
    timers,
    ...(leases === undefined ? {} : { leases }),
  };
  const rootCredential: ScramCredential | undefined = opts.rootPassword !== undefined ? makeScramCredential(opts.rootPassword, randomBytes(16)) : undefined;
  let sessions = 0;

  const factory: SessionFactory = {
    async authMethod(info: StartupInfo): Promise<AuthMethod> {
      if (opts.insecure === true) return { kind: 'trust' };
      if (info.user === ROOT_USER) return { kind: 'password', credential: rootCredential };
      const txn = db.newTxn({ readOnly: true });
      try {
        const u = await lookupUser(txn, info.user);
        await txn.commit();
        return { kind: 'password', credential: u.exists ? u.credential : undefined };
      } catch (e) {
        await txn.rollback();
        throw e;
      }
    },
    async startSession(info: StartupInfo) {
      const txn = db.newTxn({ readOnly: true });
      let snap;
      try {
        snap = await loadSnapshot(txn);
        await txn.commit();
      } catch (e) {
        await txn.rollback();
        throw e;
      }
      catalog.offer(snap);
      if (snap.database(info.database) === undefined) {
        throw new PgError('sql.undefined_database', '3D000', `database "${info.database}" does not exist`);
      }
      sessions++;
      const s = new Session(deps, info.user, info.database, info.params);
      const close = s.close.bind(s);
      s.close = async () => {
        sessions--;
        await close();
      };
      return s;
    },
  };
  return { factory, catalog, statementCache, leases, sessionCount: () => sessions, close: () => leases?.stop() };
}

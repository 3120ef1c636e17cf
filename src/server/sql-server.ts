/**
 * The SQL listener: accepts PostgreSQL-protocol connections on --sql-addr
 * and hands each socket to pgwire's handlePgConnection with the node's
 * SessionFactory.
 *
 * The one function the SQL layer plugs in through is `mountSql(kvdb, …)`:
 * it builds sql/server-entry.ts's SessionFactory over the node's KVDB (the
 * KV layer's TxnDB). Until it has mounted — the SQL layer bootstraps its
 * system descriptors through transactions, so the cluster must be
 * available — every connection's authentication gets a clear, retryable
 * refusal: SQLSTATE 57P03 cannot_connect_now, "sql: node is starting: the SQL
 * layer is not mounted on this node yet", as PostgreSQL answers while it starts
 * up (so is a node that is still joining or waiting for init). Clients take it
 * as "no session, nothing done, try again / elsewhere". A node whose clock is
 * out of bounds (DESIGN.md §6) refuses new sessions (SQLSTATE 58000) rather
 * than risk a stale read.
 *
 * SQL's range statements (SPLIT AT, SHOW RANGES, SCATTER) use the KVDB's
 * admin (src/kv/client/kv-admin.ts, TxnDB.admin). Moving a lease must be
 * proposed by the node holding it, so mountSql installs a LeaseTransferer:
 * Node.transferLease when this node holds the lease, otherwise the holder's
 * own admin endpoint (POST /_admin/transfer-lease on its --http-addr, found
 * in the node directory), and only to nodes whose liveness record is
 * current. NB: an RPC method for it would save the HTTP hop; lease moves are
 * rare admin operations, so the existing endpoint serves.
 *
 * Ownership: src/server owns the listener and its sockets; pgwire owns the
 * protocol.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { SecureContext } from 'node:tls';
import type { Logger } from '../util/log.js';
import { CancelRegistry } from '../../sql/pgwire/cancel-registry.js';
import { handlePgConnection } from '../../sql/pgwire/server.js';
import type { AuthMethod, SessionFactory } from '../../sql/pgwire/session-backend.js';
import type { KVDB } from '../../sql/kv.js';
import { CairnError } from '../util/errors.js';
import type { RangeDescriptor } from '../kv/api.js';
import type { LeaseTransferer } from '../kv/client/kv-admin.js';
import { TxnDB } from '../kv/client/txn-db.js';
import { ServerError, formatHostPort, type HostPort } from './config.js';
import { isLive, type LivenessRecord } from './liveness.js';

export interface SqlServingState {
  /** Null while the node may serve; otherwise why it refuses. */
  notServingReason(): string | null;
  /** True while the node has not started serving yet (joining, waiting for init): refusals are 57P03. */
  isStarting?(): boolean;
}

/** PostgreSQL's cannot_connect_now: the server is starting up (retry later). */
export const SQLSTATE_CANNOT_CONNECT_NOW = '57P03';

/** The SQLSTATE of a refusal by a node that is not serving (see the header). */
function notServingSqlState(state: SqlServingState): string {
  return state.isStarting?.() === true ? SQLSTATE_CANNOT_CONNECT_NOW : '58000';
}

/** What the lease transferer needs of the node (Node has it). */
export interface LeaseMover {
  readonly rpc: { readonly nodeId: number };
  readonly clock: { physicalNow(): number };
  readonly liveness: { readonly cached: ReadonlyMap<number, LivenessRecord> } | null;
  readonly directory: { get(nodeId: number): { readonly httpAddr: string } | undefined };
  /** Moves the lease of rangeId, held on this node, to the replica on toNodeId. */
  transferLease(rangeId: number, toNodeId: number): Promise<void>;
}

function isLeaseMover(x: object): x is LeaseMover {
  const m = x as Partial<LeaseMover>;
  return typeof m.transferLease === 'function' && m.rpc !== undefined && m.directory !== undefined && m.clock !== undefined && m.liveness !== undefined;
}

/** Whether `nodeId` may take a lease: its liveness record is current (unknown: not live). */
export function nodeIsLive(node: LeaseMover, nodeId: number): boolean {
  if (nodeId === node.rpc.nodeId) return true;
  const r = node.liveness?.cached.get(nodeId);
  return r !== undefined && isLive(r, node.clock.physicalNow());
}

/** HTTP timeout of a lease transfer asked of another node. */
const TRANSFER_TIMEOUT_MS = 10_000;

/** The LeaseTransferer of a node (see the header). */
export function nodeLeaseTransferer(node: LeaseMover): LeaseTransferer {
  return async (desc: RangeDescriptor, fromNodeId: number, toNodeId: number): Promise<void> => {
    if (fromNodeId === node.rpc.nodeId) return node.transferLease(desc.rangeId, toNodeId);
    const peer = node.directory.get(fromNodeId);
    if (peer === undefined) throw new ServerError('server.unknown_node', `server: n${fromNodeId} is not in the node directory`, { retryable: true });
    let res: Response;
    try {
      res = await fetch(`http://${peer.httpAddr}/_admin/transfer-lease`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ rangeId: desc.rangeId, toNodeId }),
        signal: AbortSignal.timeout(TRANSFER_TIMEOUT_MS),
      });
    } catch (e) {
      // The transfer may or may not have been proposed; the caller re-reads the lease.
      throw new ServerError('server.transfer_failed', `server: lease transfer of r${desc.rangeId} through n${fromNodeId}: ${(e as Error).message}`, { retryable: true, cause: e });
    }
    if (res.ok) return;
    const body = (await res.json().catch(() => ({}))) as { code?: string; message?: string };
    // The holder's own code (kv.not_lease_holder when the lease moved meanwhile) so the caller can retry: the
    // status server answers a retryable error 503 (status-server.ts), so 503 stays retryable here.
    throw new CairnError(body.code ?? 'server.transfer_failed', body.message ?? `server: lease transfer of r${desc.rangeId} failed (HTTP ${res.status})`, { retryable: res.status === 503 });
  };
}

const NOT_MOUNTED = 'sql: node is starting: the SQL layer is not mounted on this node yet (it mounts once the cluster can run transactions)';

/** The factory used until the SQL layer is mounted: refuses every session clearly. */
export function unmountedSessionFactory(state: SqlServingState): SessionFactory {
  return {
    authMethod: async (): Promise<AuthMethod> => {
      const why = state.notServingReason();
      if (why !== null) return { kind: 'reject', sqlState: notServingSqlState(state), message: why };
      return { kind: 'reject', sqlState: SQLSTATE_CANNOT_CONNECT_NOW, message: NOT_MOUNTED };
    },
    startSession: async () => {
      throw new ServerError('server.sql_unavailable', NOT_MOUNTED, { sqlState: SQLSTATE_CANNOT_CONNECT_NOW, retryable: true });
    },
  };
}

/**
 * The one function that mounts the SQL layer (sql/server-entry.ts) on the
 * node's KVDB (sql/kv.ts): returns the node's SessionFactory, which refuses
 * new sessions while the node is not serving (clock out of bounds). With no
 * KVDB — the transactional KV client has not landed — SQL stays unmounted.
 */
export async function mountSql(kvdb: KVDB | null, state: SqlServingState, opts: { insecure: boolean; rootPassword?: string }): Promise<SessionFactory> {
  if (kvdb === null) return unmountedSessionFactory(state);
  if (kvdb instanceof TxnDB && !kvdb.admin.canScatter && isLeaseMover(state)) kvdb.admin.useLeaseTransferer(nodeLeaseTransferer(state), (id) => nodeIsLive(state, id));
  const { createSqlServer } = await import('../../sql/server-entry.js');
  const sql = await createSqlServer(kvdb, { insecure: opts.insecure, ...(opts.rootPassword === undefined ? {} : { rootPassword: opts.rootPassword }) });
  return {
    authMethod: async (info) => {
      const why = state.notServingReason();
      if (why !== null) return { kind: 'reject', sqlState: notServingSqlState(state), message: why };
      return sql.factory.authMethod(info);
    },
    startSession: (info) => sql.factory.startSession(info),
    close: () => sql.close(),
  };
}

export class SqlServer {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  readonly cancelRegistry = new CancelRegistry();
  connections = 0;

  /** Connections whose socket has not closed yet. */
  get openConnections(): number {
    return this.sockets.size;
  }

  constructor(
    private factory: SessionFactory,
    private readonly log: Logger,
    private readonly secureContext?: SecureContext,
  ) {}

  /** Replaces the factory new connections use (mounting SQL once the node serves). */
  setFactory(factory: SessionFactory): void {
    this.factory = factory;
  }

  /** Binds; rejects with server.listen_failed naming the flag. */
  listen(addr: HostPort): Promise<HostPort> {
    const server = createServer((socket) => this.accept(socket));
    this.server = server;
    return listenOn(server, addr, '--sql-addr');
  }

  private accept(socket: Socket): void {
    this.connections++;
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    const conn = handlePgConnection(socket, {
      factory: this.factory,
      cancelRegistry: this.cancelRegistry,
      ...(this.secureContext === undefined ? {} : { secureContext: this.secureContext }),
      logger: this.log,
      onInternalError: (err) => this.log.error({ err: (err as Error).message }, 'sql: internal error'),
    });
    void conn;
  }

  /** Stops accepting and closes open connections. */
  async close(): Promise<void> {
    const s = this.server;
    this.server = null;
    this.factory.close?.();
    for (const sock of this.sockets) sock.destroy();
    if (s !== null) await new Promise<void>((r) => s.close(() => r()));
  }
}

/** listen() with the error turned into one clear line. */
export function listenOn(server: Server, addr: HostPort, flag: string): Promise<HostPort> {
  return new Promise((resolve, reject) => {
    const fail = (e: NodeJS.ErrnoException): void => {
      const why = e.code === 'EADDRINUSE' ? 'address already in use' : e.code === 'EADDRNOTAVAIL' ? 'address not available on this machine' : e.message;
      reject(new ServerError('server.listen_failed', `server: cannot listen on ${formatHostPort(addr)} (${flag}): ${why}`, { cause: e }));
    };
    server.once('error', fail);
    server.listen({ host: addr.host, port: addr.port }, () => {
      server.off('error', fail);
      const a = server.address();
      resolve(a !== null && typeof a === 'object' ? { host: a.address, port: a.port } : addr);
    });
  });
}

/**
 * An in-process Cairn SQL server over MemoryKV for SQL tests: a real pgwire
 * listener on 127.0.0.1 (ephemeral port) driving sql/server-entry.ts.
 *
 *   const srv = await startSqlServer();            // insecure (trust) by default
 *   const c = new pg.Client(srv.url); …
 *   await srv.stop();
 *
 * `kv` is exposed so tests can inject retry errors (MemoryKV.injectRetryErrors)
 * and look at split points. Not for production: MemoryKV is a test stand-in.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { CancelRegistry } from '../../sql/pgwire/cancel-registry.js';
import { handlePgConnection } from '../../sql/pgwire/server.js';
import { createSqlServer, type SqlServer, type SqlServerOptions } from '../../sql/server-entry.js';
import { MemoryKV } from './memory-kv.js';
import type { KVDB } from '../../sql/kv.js';

export interface TestSqlServer {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly kv: MemoryKV;
  readonly sql: SqlServer;
  /** Connection-level bugs (XX000) reported by pgwire. */
  readonly internalErrors: unknown[];
  stop(): Promise<void>;
}

/**
 * @param opts.kv the MemoryKV to serve (a fresh one by default)
 * @param opts.db serve another KVDB instead (e.g. the real TxnDB of an in-process cluster); `kv` is then unused
 */
export async function startSqlServer(opts: SqlServerOptions & { kv?: MemoryKV; db?: KVDB } = { insecure: true }): Promise<TestSqlServer> {
  const kv = opts.kv ?? new MemoryKV();
  const sql = await createSqlServer(opts.db ?? kv, opts);
  const cancelRegistry = new CancelRegistry();
  const sockets = new Set<Socket>();
  const internalErrors: unknown[] = [];
  const server: Server = createServer((sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    handlePgConnection(sock, { factory: sql.factory, cancelRegistry, onInternalError: (e) => internalErrors.push(e) });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('sql-server: no address');
  const port = addr.port;
  return {
    url: `postgresql://root@127.0.0.1:${port}/defaultdb`,
    host: '127.0.0.1',
    port,
    kv,
    sql,
    internalErrors,
    async stop() {
      sql.close();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

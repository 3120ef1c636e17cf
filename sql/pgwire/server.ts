/**
 * Drives a PgConn from a net.Socket: the thin I/O owner around the pure
 * connection state machine. The listener itself belongs to src/server, which
 * calls `handlePgConnection` for every accepted socket.
 *
 *   socket 'data' ──► conn.feed()   (false → socket.pause(); resumeInput → resume)
 *   conn output  ──► socket.write() (writableLength is the transport's buffer;
 *                                    'drain' releases a waiting executor);
 *                    corked until setImmediate, so the writes of one turn
 *                    of the event loop leave in one writev (DESIGN.md §4)
 *   SSLRequest   ──► 'S', then the socket is wrapped in a server TLSSocket
 *                    and input flows through it (only with a secureContext)
 *   'end' / 'error' / 'close' ──► conn.inputEnded()
 *   not ready after authTimeoutMs ──► closed (a client that connects and
 *                    never finishes startup does not hold a socket forever)
 *
 * Ownership: the returned PgConn and the socket are the caller's to observe;
 * the adapter ends the socket when the connection closes (after a FATAL
 * error, Terminate or CancelRequest) and destroys it once the client ends.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { TLSSocket, createSecureContext, type SecureContext } from 'node:tls';
import { CairnError } from '../../src/util/index.js';
import { PgConn, type ConnOptions, type ConnTransport } from './conn.js';

/**
 * The TLS context of `--certs-dir`, named as in CockroachDB: node.crt and
 * node.key (and ca.crt, if present, to verify client certificates). Returns
 * undefined when the directory has neither, so SSLRequest is answered 'N';
 * only one of the two is a configuration error. Reads files: call it at
 * startup, from the I/O owner.
 */
export function secureContextFromCertsDir(dir: string): SecureContext | undefined {
  const certPath = join(dir, 'node.crt');
  const keyPath = join(dir, 'node.key');
  const caPath = join(dir, 'ca.crt');
  const hasCert = existsSync(certPath);
  const hasKey = existsSync(keyPath);
  if (!hasCert && !hasKey) return undefined;
  if (!hasCert || !hasKey) {
    throw new CairnError('pgwire.certs_incomplete', `pgwire: ${dir} must hold both node.crt and node.key`);
  }
  return createSecureContext({
    cert: readFileSync(certPath),
    key: readFileSync(keyPath),
    ca: existsSync(caPath) ? readFileSync(caPath) : undefined,
  });
}

export interface PgConnectionOptions extends Omit<ConnOptions, 'random' | 'tlsAvailable' | 'remoteAddress'> {
  /** With a context (from --certs-dir), SSLRequest is answered 'S' and TLS starts. */
  readonly secureContext?: SecureContext;
  /** Random source; crypto.randomBytes by default. */
  readonly random?: (n: number) => Buffer;
  /**
   * Closes a connection that has not finished startup and authentication
   * within this many milliseconds (PostgreSQL's authentication_timeout,
   * 60 s by default there); 0 disables it.
   */
  readonly authTimeoutMs?: number;
}

const DEFAULT_AUTH_TIMEOUT_MS = 60_000;

export function handlePgConnection(socket: Socket, options: PgConnectionOptions): PgConn {
  let current: Socket = socket;
  let ended = false;
  socket.setNoDelay(true);

  // Writes made in one turn of the event loop (say, the answers to a
  // pipeline of Syncs that arrived in one chunk) leave in one writev.
  let corked: Socket | undefined;
  const uncork = (): void => {
    corked?.uncork();
    corked = undefined;
  };
  const transport: ConnTransport = {
    write: (data) => {
      if (current.destroyed) return;
      if (corked === undefined) {
        corked = current;
        corked.cork();
        setImmediate(uncork);
      }
      current.write(data);
    },
    bufferedBytes: () => current.writableLength,
    waitForDrain: () =>
      new Promise<void>((resolve) => {
        const s = current;
        if (s.destroyed || !s.writableNeedDrain) return resolve();
        const done = (): void => {
          s.off('drain', done);
          s.off('close', done);
          resolve();
        };
        s.on('drain', done);
        s.on('close', done);
      }),
    startTls: () => {
      uncork(); // the 'S' must leave before the handshake
      detach(socket);
      // NB: keep an error listener on the raw socket: an 'error' event with
      // no listener would be thrown by the emitter and crash the process.
      socket.on('error', onError);
      const tls = new TLSSocket(socket, { isServer: true, secureContext: options.secureContext });
      current = tls;
      attach(tls);
    },
    resumeInput: () => current.resume(),
    close: () => {
      ended = true;
      uncork();
      // Keep reading (and dropping) input so that the kernel does not answer
      // the client's pending bytes with a reset before our last message
      // (e.g. a FATAL ErrorResponse) is read; release the socket once our
      // output is flushed, as PostgreSQL's backend does by exiting.
      const s = current;
      s.resume();
      s.end(() => s.destroy());
    },
  };

  const conn = new PgConn(transport, {
    ...options,
    random: options.random ?? randomBytes,
    tlsAvailable: options.secureContext !== undefined,
    remoteAddress: socket.remoteAddress,
  });

  function onData(chunk: Buffer): void {
    if (!conn.feed(chunk) && !ended) current.pause();
  }
  function onEnd(): void {
    conn.inputEnded();
    current.destroy();
  }
  function onError(): void {
    conn.inputEnded();
    current.destroy();
  }
  function attach(s: Socket): void {
    s.on('data', onData);
    s.on('end', onEnd);
    s.on('error', onError);
    s.on('close', onEnd);
  }
  function detach(s: Socket): void {
    s.off('data', onData);
    s.off('end', onEnd);
    s.off('error', onError);
    s.off('close', onEnd);
  }
  attach(socket);
  const authTimeoutMs = options.authTimeoutMs ?? DEFAULT_AUTH_TIMEOUT_MS;
  if (authTimeoutMs > 0) {
    const timer = setTimeout(() => {
      if (conn.isReady) return;
      conn.inputEnded();
      current.destroy();
    }, authTimeoutMs);
    timer.unref();
    void conn.closed.then(() => clearTimeout(timer));
  }
  return conn;
}

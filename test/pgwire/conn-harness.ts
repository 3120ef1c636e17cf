/**
 * Drives a PgConn in memory: an injected transport that records output and
 * simulates a socket buffer (for backpressure), a seeded random source, the
 * toy backend, and helpers to speak pg-protocol's client messages.
 */
import { serialize } from 'pg-protocol';
import { PgConn, type ConnOptions, type ConnTransport } from '../../sql/pgwire/conn.js';
import { CancelRegistry } from '../../sql/pgwire/cancel-registry.js';
import { Prng } from '../../src/util/index.js';
import { ToyFactory, type ToyOptions } from './toy-backend.js';
import { parseBackend, type PeerMessage } from './pg-peer.js';

export class MemoryTransport implements ConnTransport {
  readonly out: Buffer[] = [];
  closed = false;
  tlsStarted = false;
  resumed = 0;
  /** When set, written bytes count as buffered until drain() (a client that does not read). */
  holdOutput = false;
  private buffered = 0;
  private waiters: (() => void)[] = [];

  write(data: Buffer): void {
    this.out.push(data);
    if (this.holdOutput) this.buffered += data.length;
  }
  bufferedBytes(): number {
    return this.buffered;
  }
  waitForDrain(): Promise<void> {
    if (this.closed || this.buffered === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
  get drainWaiters(): number {
    return this.waiters.length;
  }
  /** The client read everything. */
  drain(): void {
    this.buffered = 0;
    const w = this.waiters;
    this.waiters = [];
    for (const r of w) r();
  }
  startTls(): void {
    this.tlsStarted = true;
  }
  resumeInput(): void {
    this.resumed++;
  }
  close(): void {
    this.closed = true;
    this.drain();
  }
}

export interface Harness {
  readonly conn: PgConn;
  readonly transport: MemoryTransport;
  readonly factory: ToyFactory;
  readonly registry: CancelRegistry;
  readonly internalErrors: unknown[];
  /** Feeds client bytes, waits until processed, returns the new backend messages. */
  send(...msgs: Buffer[]): Promise<PeerMessage[]>;
  /** Like send, for answers that are not messages (the one-byte SSL answer): the raw new bytes. */
  raw(...msgs: Buffer[]): Promise<Buffer>;
  /** All output bytes so far. */
  output(): Buffer;
}

export function harness(
  toy: ToyOptions = { insecure: true },
  opts: Partial<ConnOptions> = {},
  registry = new CancelRegistry(),
): Harness {
  const transport = new MemoryTransport();
  const factory = new ToyFactory(toy);
  const prng = new Prng(42);
  const internalErrors: unknown[] = [];
  const conn = new PgConn(transport, {
    factory,
    cancelRegistry: registry,
    random: (n) => prng.bytes(n),
    onInternalError: (e) => internalErrors.push(e),
    ...opts,
  });
  let seen = 0;
  const h: Harness = {
    conn,
    transport,
    factory,
    registry,
    internalErrors,
    async send(...msgs) {
      const fresh = await h.raw(...msgs);
      return fresh.length === 0 ? [] : parseBackend(fresh);
    },
    async raw(...msgs) {
      for (const m of msgs) conn.feed(m);
      await conn.whenIdle();
      const fresh = transport.out.slice(seen);
      seen = transport.out.length;
      return Buffer.concat(fresh);
    },
    output: () => Buffer.concat(transport.out),
  };
  return h;
}

/** A started trust connection (StartupMessage answered). */
export async function started(toy: ToyOptions = { insecure: true }, opts: Partial<ConnOptions> = {}, registry?: CancelRegistry): Promise<Harness> {
  const h = harness(toy, opts, registry);
  await h.send(serialize.startup({ user: 'root', database: 'db' }));
  return h;
}

export const names = (msgs: readonly PeerMessage[]): string[] => msgs.map((m) => m.name);

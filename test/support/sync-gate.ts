/**
 * A gate on an engine's synced writes (a slow fsync a test controls): the
 * engine's writes go in submission order, as LevelDB's do (a write queued
 * behind a synced one completes after it), and synced ones wait while the
 * gate is closed. Used to hold a Store's Ready loop inside a round.
 *
 *   const g = gateSyncs(c.node(i).engine);
 *   g.close(); …; await c.waitFor(() => g.holding); …; g.open();
 *   g.passOne();                            // only the held write goes on
 *
 * Ownership: replaces `e.write` for the engine's lifetime; open() the gate
 * in `finally` so a failed test never leaves a store's loop stuck.
 */
import type { Engine, WriteBatch, WriteOptions } from '../../storage/engine.js';

export interface SyncGate {
  close(): void;
  open(): void;
  /** Lets the synced write waiting at the closed gate through; the gate stays closed for the next ones. */
  passOne(): void;
  /** A synced write is waiting at the closed gate. */
  readonly holding: boolean;
}

export function gateSyncs(e: Engine): SyncGate {
  const write = e.write.bind(e);
  let queue: Promise<unknown> = Promise.resolve();
  let closed = false;
  let holding = false;
  let passes = 0;
  let release: (() => void) | null = null;
  const opened = (): Promise<void> =>
    new Promise<void>((r) => {
      release = r;
    });
  e.write = (b: WriteBatch, o?: WriteOptions): Promise<void> => {
    const p = queue.then(async () => {
      while (o?.sync === true && closed && passes === 0) {
        holding = true;
        await opened();
      }
      if (o?.sync === true && closed) passes--;
      holding = false;
      return write(b, o);
    });
    queue = p.catch(() => undefined);
    return p;
  };
  return {
    close: () => void (closed = true),
    open: () => {
      closed = false;
      (release as (() => void) | null)?.();
    },
    passOne: () => {
      passes++;
      (release as (() => void) | null)?.();
    },
    get holding() {
      return holding;
    },
  };
}

/**
 * Routes CancelRequests to sessions (PostgreSQL docs §55.2.7 "Canceling
 * Requests in Progress").
 *
 * Each authenticated connection registers a cancel callback and gets a
 * process id, which it reports with its secret key in BackendKeyData. A
 * CancelRequest arrives on a new connection carrying (pid, secret); the
 * registry calls the callback only when both match, so a client cannot cancel
 * another's statement by guessing pids.
 *
 * Ownership: one registry per SQL listener (node); connections unregister
 * when they close. Process ids are unique among registered connections,
 * positive int32, allocated round-robin.
 */
export class CancelRegistry {
  private nextPid = 1;
  private readonly entries = new Map<number, { readonly secretKey: number; readonly cancel: () => void }>();

  /** Registers a connection; returns its process id. */
  register(secretKey: number, cancel: () => void): number {
    while (this.entries.has(this.nextPid)) this.advance();
    const pid = this.nextPid;
    this.advance();
    this.entries.set(pid, { secretKey, cancel });
    return pid;
  }

  private advance(): void {
    this.nextPid = this.nextPid >= 0x7fffffff ? 1 : this.nextPid + 1;
  }

  unregister(processId: number): void {
    this.entries.delete(processId);
  }

  /** Cancels the matching connection's statement; false when no connection matches. */
  cancel(processId: number, secretKey: number): boolean {
    const e = this.entries.get(processId);
    if (e === undefined || e.secretKey !== secretKey) return false;
    e.cancel();
    return true;
  }

  get size(): number {
    return this.entries.size;
  }
}

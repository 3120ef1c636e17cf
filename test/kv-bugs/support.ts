/**
 * Helpers shared by the kv-bugs tests.
 */

/**
 * Runs `fn` again while it fails with kv.proposal_dropped (retryable: the
 * proposal never entered any log, e.g. a new leaseholder still taking over
 * the Raft leadership). Bounded by `timeoutMs`.
 */
export async function retryDropped<T>(fn: () => Promise<T>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if ((e as { code?: string }).code !== 'kv.proposal_dropped' || Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}

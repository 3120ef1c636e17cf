/**
 * A closed-loop driver shared by the KV and SQL benches: `clients` loops each
 * await one operation at a time for `durationMs`; returns ops/s and latency
 * percentiles (from an HdrHistogram in µs) plus error counts by code. An
 * operation that throws counts as an error (its latency is not recorded).
 *
 * Ownership: pure driver; the operations own their connections.
 */
import * as hdr from 'hdr-histogram-js';

export interface LoopResult {
  readonly ops: number;
  readonly opsPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly errors: number;
  /** Errors by code (SQLSTATE, CairnError code or "error"), with the first message of each. */
  readonly errorCodes: Record<string, { count: number; message: string }>;
}

export async function closedLoop(clients: number, durationMs: number, op: (client: number, seq: number) => Promise<unknown>): Promise<LoopResult> {
  const h = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: 3 });
  const errorCodes: Record<string, { count: number; message: string }> = {};
  let ops = 0;
  let errors = 0;
  const start = performance.now();
  const end = start + durationMs;
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let seq = 0; performance.now() < end; seq++) {
        const t0 = performance.now();
        try {
          await op(c, seq);
          h.recordValue(Math.max(1, Math.round((performance.now() - t0) * 1000)));
          ops++;
        } catch (e) {
          errors++;
          const code = String((e as { code?: unknown }).code ?? 'error');
          const slot = (errorCodes[code] ??= { count: 0, message: (e as Error).message });
          slot.count++;
        }
      }
    }),
  );
  const sec = (performance.now() - start) / 1000;
  const r = { ops, opsPerSec: Math.round(ops / sec), p50Ms: h.getValueAtPercentile(50) / 1000, p99Ms: h.getValueAtPercentile(99) / 1000, errors, errorCodes };
  h.destroy();
  return r;
}

/**
 * ComputeChecksum: a replicated no-op whose side effect makes every replica
 * hash its copy of the range (replicated spans) right after applying it, so
 * all replicas hash the same applied index (CockroachDB's consistency check).
 * Spans: none (the hash reads an engine snapshot, not the latched state).
 */
import type { ComputeChecksumRequest } from '../api.js';
import { registerCommand } from './command.js';

registerCommand<ComputeChecksumRequest>({
  kind: 'computeChecksum',
  isWrite: true,
  declareKeys() {},
  evaluate(ctx, _rw, _h, req) {
    ctx.sideEffects.checksumId = req.checksumId;
    return { kind: 'computeChecksum' };
  },
});

/**
 * LeaseInfo: returns the lease the replica knows of. Spans: none (the lease
 * is read from the replica's in-memory state, which mirrors the lease key).
 */
import type { LeaseInfoRequest } from '../api.js';
import { registerCommand } from './command.js';

registerCommand<LeaseInfoRequest>({
  kind: 'leaseInfo',
  isWrite: false,
  declareKeys() {},
  evaluate(ctx) {
    return { kind: 'leaseInfo', lease: ctx.lease };
  },
});

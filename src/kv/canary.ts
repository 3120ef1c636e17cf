/**
 * Canary flags: deliberately broken builds for the jepsen-style suite
 * (jepsen-style/run.ts --canary NAME sets CAIRN_CANARY on every node). Each
 * flag disables exactly one safety check, so a run that does not report an
 * anomaly under it shows the checker (or the nemesis) is blind to that bug.
 *
 *   CAIRN_CANARY=skip-timestamp-cache      writes are not pushed above the timestamp cache (replica.ts)
 *   CAIRN_CANARY=skip-uncertainty-restart  reads ignore their uncertainty limit (replica.ts)
 *   CAIRN_CANARY=ack-before-quorum         a write is answered when proposed, before it applies (replica.ts)
 *   CAIRN_CANARY=expired-lease-reads       a replica that held the lease serves reads without checking it is still valid (replica.ts)
 *
 * What catches each (jepsen-style/RESULTS.md, 60 s runs; CI: test/jepsen-run/cairn-sql-ci.test.ts):
 *   skip-timestamp-cache      append (Elle) under lease transfers
 *   skip-uncertainty-restart  register-handoff under clock-writer (5 nodes: n1 ahead, reads
 *                             through the other nodes right after each write through n1)
 *   ack-before-quorum         kv-register under partition
 *   expired-lease-reads       kv-register-n1-reads under partition-leaseholder (lease moved
 *                             to n1, n1 cut off; its clients keep reading from it)
 *
 * Invariants: read once, when this module is first imported (node start-up);
 * an unknown name is refused at start-up (a typo must not silently run the
 * correct build). Production runs leave CAIRN_CANARY unset: every flag false.
 * Tests may flip `canary` fields in-process (the object is mutable on purpose)
 * and must restore them.
 *
 * Ownership: the KV layer; nothing outside src/kv reads these flags.
 */
import { CairnError } from '../util/errors.js';

export const CANARY_NAMES = ['skip-timestamp-cache', 'skip-uncertainty-restart', 'ack-before-quorum', 'expired-lease-reads'] as const;
export type CanaryName = (typeof CANARY_NAMES)[number];

export interface CanaryFlags {
  skipTimestampCache: boolean;
  skipUncertaintyRestart: boolean;
  ackBeforeQuorum: boolean;
  expiredLeaseReads: boolean;
}

/** The flags for a CAIRN_CANARY value (undefined or empty: none). */
export function parseCanary(value: string | undefined): CanaryFlags {
  const f: CanaryFlags = { skipTimestampCache: false, skipUncertaintyRestart: false, ackBeforeQuorum: false, expiredLeaseReads: false };
  if (value === undefined || value === '') return f;
  switch (value) {
    case 'skip-timestamp-cache':
      f.skipTimestampCache = true;
      break;
    case 'skip-uncertainty-restart':
      f.skipUncertaintyRestart = true;
      break;
    case 'ack-before-quorum':
      f.ackBeforeQuorum = true;
      break;
    case 'expired-lease-reads':
      f.expiredLeaseReads = true;
      break;
    default:
      throw new CairnError('kv.unknown_canary', `kv: unknown CAIRN_CANARY ${JSON.stringify(value)} (known: ${CANARY_NAMES.join(', ')})`);
  }
  return f;
}

/** The process's canary flags, from CAIRN_CANARY at start-up. */
export const canary: CanaryFlags = parseCanary(process.env['CAIRN_CANARY']);

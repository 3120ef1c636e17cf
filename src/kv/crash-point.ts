/**
 * Crash points: test-only places where a node's process kills itself
 * (SIGKILL, no clean-up, exactly as a power cut) so multi-process tests can
 * place a coordinator's death inside a precise window of the commit protocol
 * (test/kv-txn-multiproc/recovery.test.ts). Set on one node at start-up:
 *
 *   CAIRN_CRASH_POINT=after-staging:<hex>  a parallel commit whose STAGING batch
 *       was acknowledged in full (the record STAGING on the anchor's leaseholder,
 *       every in-flight write acknowledged by its leaseholder) kills the process
 *       before the client is answered and before the record is made COMMITTED:
 *       the transaction is implicitly committed, only recovery can tell.
 *   CAIRN_CRASH_POINT=staging-only:<hex>   the commit batch goes without the
 *       write of its last in-flight key (the EndTxn still lists it: the record
 *       goes STAGING with the other writes acknowledged), then the process is
 *       killed: that one write never lands, so recovery must prevent it and
 *       abort.
 *
 * <hex> restricts the point to commits one of whose in-flight write keys
 * contains those bytes (e.g. the UTF-8 of a SQL string primary key, which
 * the key encoding keeps verbatim), so the node's own and the test's other
 * transactions commit normally. Before dying the process writes one line,
 * `kv: crash point <name> reached (txn <hex id> anchor <hex key>)`, to
 * stderr (a test finds the record there: transactionKey(anchor, id)).
 *
 * Invariants: read once, when this module is first imported (node start-up);
 * an unknown name or a missing/odd <hex> is refused at start-up. Production
 * leaves CAIRN_CRASH_POINT unset: `crashPoint.armed` is false and the one call
 * site (TxnCoordSender's commit send) takes its ordinary path, untouched.
 *
 * Ownership: the KV layer (src/kv/client/txn-coord-sender.ts calls
 * sendAtCrashPoint); nothing outside src/kv reads the flag.
 */
import { writeSync } from 'node:fs';
import { assert } from '../util/assert.js';
import { CairnError } from '../util/errors.js';
import { tsLess } from '../util/hlc.js';
import type { BatchRequest, BatchResponse, Request } from './api.js';
import type { Sender } from './kv-client.js';
import type { EndTxnRequest, TxnRecordResponse } from './txn-api.js';

export const CRASH_POINT_NAMES = ['after-staging', 'staging-only'] as const;
export type CrashPointName = (typeof CRASH_POINT_NAMES)[number];

export interface CrashPoint {
  readonly armed: boolean;
  readonly name: CrashPointName | null;
  /** The bytes one in-flight write key must contain. */
  readonly keyContains: Buffer;
}

/** The crash point of a CAIRN_CRASH_POINT value (undefined or empty: none). */
export function parseCrashPoint(value: string | undefined): CrashPoint {
  if (value === undefined || value === '') return { armed: false, name: null, keyContains: Buffer.alloc(0) };
  const colon = value.indexOf(':');
  const name = colon < 0 ? value : value.slice(0, colon);
  const hex = colon < 0 ? '' : value.slice(colon + 1);
  if (!(CRASH_POINT_NAMES as readonly string[]).includes(name)) {
    throw new CairnError('kv.unknown_crash_point', `kv: unknown CAIRN_CRASH_POINT ${JSON.stringify(value)} (known: ${CRASH_POINT_NAMES.join(', ')}, each followed by :<hex key bytes>)`);
  }
  if (hex.length === 0 || hex.length % 2 !== 0 || !/^[0-9a-fA-F]+$/.test(hex)) {
    throw new CairnError('kv.unknown_crash_point', `kv: CAIRN_CRASH_POINT ${JSON.stringify(value)} needs :<hex key bytes> (an even number of hex digits)`);
  }
  return { armed: true, name: name as CrashPointName, keyContains: Buffer.from(hex, 'hex') };
}

/** The process's crash point, from CAIRN_CRASH_POINT at start-up. */
export const crashPoint: CrashPoint = parseCrashPoint(process.env['CAIRN_CRASH_POINT']);

/** The batch's EndTxn(commit) if one of its in-flight write keys contains cp's bytes. */
export function matchingCommit(cp: CrashPoint, requests: readonly Request[]): EndTxnRequest | null {
  const last = requests[requests.length - 1];
  if (!cp.armed || last === undefined || last.kind !== 'endTxn' || !last.commit) return null;
  return last.inFlightWrites.some((w) => w.key.includes(cp.keyContains)) ? last : null;
}

/** The batch a staging-only crash sends: all but the write of the last in-flight key. */
export function stagingOnlyBatch(ba: BatchRequest, end: EndTxnRequest): BatchRequest {
  const withheld = end.inFlightWrites[end.inFlightWrites.length - 1]?.key;
  return { header: ba.header, requests: ba.requests.filter((r) => r === end || withheld === undefined || !('key' in r) || !r.key.equals(withheld)) };
}

function die(name: CrashPointName, ba: BatchRequest, end: EndTxnRequest): never {
  writeSync(2, `kv: crash point ${name} reached (txn ${ba.header.txn?.id.toString('hex') ?? '?'} anchor ${end.key.toString('hex')})\n`);
  process.kill(process.pid, 'SIGKILL');
  // SIGKILL is delivered before kill() returns; never reached.
  throw new Error('kv: crash point survived SIGKILL');
}

/**
 * Sends a commit batch through sender, dying at the armed crash point when
 * the batch matches it (see the header); any other batch is sent unchanged.
 */
export async function sendAtCrashPoint(sender: Sender, ba: BatchRequest, cp: CrashPoint = crashPoint): Promise<BatchResponse> {
  const end = matchingCommit(cp, ba.requests);
  if (end === null || cp.name === null) return sender.send(ba);
  const withhold = cp.name === 'staging-only';
  const res = await sender.send(withhold ? stagingOnlyBatch(ba, end) : ba);
  const rec = (res.responses[res.responses.length - 1] as TxnRecordResponse).record;
  // after-staging: only an implicit commit at the staged timestamp (no part pushed) is the window under test.
  if (rec?.status === 'staging' && (withhold || !tsLess(rec.writeTimestamp, res.timestamp))) die(cp.name, ba, end);
  // A cut-down batch never answers the coordinator: its result would claim a write that was never sent.
  assert(!withhold, 'kv: staging-only crash point: the cut-down commit batch did not stage');
  return res;
}

/**
 * Measuring the clock offset to each peer (CockroachDB's RemoteClockMonitor),
 * so the node layer can stop serving when this node's clock is out of bounds
 * (DESIGN.md §3, "Time"; §6, "Clock offset beyond the bound").
 *
 * A ping is an ordinary call of the reserved method PING_METHOD. The caller
 * reads its physical clock at send (t0) and at receipt (t1); the peer answers
 * with its physical clock reading r:
 *
 *     ping response payload:  [uvarint r: peer physical µs]
 *
 *     offset      = r − (t0 + t1) / 2      peer ahead of us when positive
 *     uncertainty = (t1 − t0) / 2          r was read somewhere inside [t0, t1]
 *
 * Physical time comes from the Clock's injected source (clock.physicalNow()),
 * so manual and skewed clocks are measured like real ones.
 *
 * isOffsetHealthy applies CockroachDB's rule (RemoteOffset.isHealthy, as
 * src/server/clock-monitor.ts does): this node is healthy while the peers
 * whose offset is not surely beyond the tolerated bound (|offset| −
 * uncertainty < tolerance; tolerance 80 % of the max offset by default) form
 * a majority of the peers measured. With no measurements it is healthy. An
 * ambiguous measurement — the bound inside offset ± uncertainty — counts as
 * within: a slow ping of a synchronized peer on a loaded machine (round trip
 * 900 ms, offset −450 ms ± 450 ms) must not stop this node from serving,
 * while a skew beyond the bound is still surely beyond it for any round trip
 * shorter than twice the excess. (Counting it as beyond made in-process
 * clusters refuse all KV and stop renewing leases whenever a DistSender
 * probe's round trip passed 400 ms — test/kv-availability/leaseholder-partition
 * at load 24–30: 'n3 does not serve: its clock is beyond the max offset'.)
 *
 * Ownership: src/rpc. Pure functions except for the ping handler itself.
 */
import type { Clock } from '../util/hlc.js';
import { BufReader, BufWriter } from './codec.js';
import type { RpcHandler } from './transport.js';

/** Reserved method id of the clock-offset ping; the layers above cannot register it. */
export const PING_METHOD = 0xffff;

export interface OffsetMeasurement {
  /** Peer physical time minus ours, in µs (positive: the peer is ahead). */
  readonly offsetMicros: number;
  /** Half the round trip, in µs: the true offset is within offset ± uncertainty. */
  readonly uncertaintyMicros: number;
  /** Our physical time when measured, µs. */
  readonly measuredAt: number;
}

/** Serves pings: answers with this node's physical clock reading. */
export function pingHandler(clock: Clock): RpcHandler {
  return () => {
    const w = new BufWriter(16);
    w.uvarint(clock.physicalNow());
    return w.copyOut();
  };
}

/** The measurement from a ping sent at t0 and answered at t1 (both our physical µs). */
export function measureOffset(response: Buffer, t0: number, t1: number): OffsetMeasurement {
  const r = new BufReader(response);
  const remote = r.uvarint();
  r.expectEnd('ping response');
  return { offsetMicros: remote - (t0 + t1) / 2, uncertaintyMicros: (t1 - t0) / 2, measuredAt: t1 };
}

/**
 * True while a majority of the measured peers is not surely beyond `toleranceMicros`
 * of this node (or nothing has been measured).
 */
export function isOffsetHealthy(measurements: Iterable<OffsetMeasurement>, toleranceMicros: number): boolean {
  let total = 0;
  let healthy = 0;
  for (const m of measurements) {
    total++;
    if (Math.abs(m.offsetMicros) - m.uncertaintyMicros < toleranceMicros) healthy++;
  }
  return total === 0 || healthy * 2 > total;
}

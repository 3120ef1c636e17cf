/**
 * Hybrid logical clock (Kulkarni et al., "Logical Physical Clocks", 2014), as
 * CockroachDB's util/hlc uses it.
 *
 * A Timestamp is { wall, logical }: wall is microseconds since the Unix epoch
 * (exact in a double until the year 2255), logical breaks ties between events
 * in the same microsecond. Timestamps order by wall, then logical.
 *
 * The Clock never reads the OS clock itself: its physical source is injected
 * (`systemPhysicalMicros` in production, a ManualPhysical in tests, a skewed
 * source in the jepsen-style suite). Invariants:
 *   - now() is strictly monotonic, even when the physical source jumps back;
 *   - update(remote) never moves the clock backwards, and afterwards
 *     now() > remote;
 *   - update(remote) rejects (ClockOffsetError, nothing changed) a remote
 *     timestamp more than maxOffset ahead of our physical time: accepting it
 *     would drag this node's clock beyond the bound correctness relies on.
 */
import { CairnError } from './errors.js';

export interface Timestamp {
  readonly wall: number;
  readonly logical: number;
}

export const ZERO_TIMESTAMP: Timestamp = Object.freeze({ wall: 0, logical: 0 });
/** Larger than any timestamp a clock produces. */
export const MAX_TIMESTAMP: Timestamp = Object.freeze({ wall: Number.MAX_SAFE_INTEGER, logical: 0xffffffff });

export function ts(wall: number, logical = 0): Timestamp {
  return { wall, logical };
}

export function compareTimestamps(a: Timestamp, b: Timestamp): number {
  if (a.wall !== b.wall) return a.wall < b.wall ? -1 : 1;
  if (a.logical !== b.logical) return a.logical < b.logical ? -1 : 1;
  return 0;
}

export function tsLess(a: Timestamp, b: Timestamp): boolean {
  return compareTimestamps(a, b) < 0;
}

export function tsLessEq(a: Timestamp, b: Timestamp): boolean {
  return compareTimestamps(a, b) <= 0;
}

export function tsEqual(a: Timestamp, b: Timestamp): boolean {
  return a.wall === b.wall && a.logical === b.logical;
}

export function tsMax(a: Timestamp, b: Timestamp): Timestamp {
  return compareTimestamps(a, b) >= 0 ? a : b;
}

export function tsMin(a: Timestamp, b: Timestamp): Timestamp {
  return compareTimestamps(a, b) <= 0 ? a : b;
}

/** The smallest timestamp greater than t. */
export function tsNext(t: Timestamp): Timestamp {
  if (t.logical === 0xffffffff) return { wall: t.wall + 1, logical: 0 };
  return { wall: t.wall, logical: t.logical + 1 };
}

/** The largest timestamp smaller than t (t must be above zero). */
export function tsPrev(t: Timestamp): Timestamp {
  if (t.logical > 0) return { wall: t.wall, logical: t.logical - 1 };
  if (t.wall <= 0) throw new RangeError('hlc: no timestamp precedes zero');
  return { wall: t.wall - 1, logical: 0xffffffff };
}

export function tsAddMicros(t: Timestamp, micros: number): Timestamp {
  return { wall: t.wall + micros, logical: t.logical };
}

/** "1700000000.000001,0": seconds.micros,logical — the form keys print in. */
export function formatTimestamp(t: Timestamp): string {
  const secs = Math.floor(t.wall / 1e6);
  const micros = t.wall - secs * 1e6;
  return `${secs}.${String(micros).padStart(6, '0')},${t.logical}`;
}

/** A source of physical time in microseconds since the epoch. */
export type PhysicalClock = () => number;

export const systemPhysicalMicros: PhysicalClock = () => {
  // performance.timeOrigin + now() has sub-millisecond resolution.
  return Math.floor((performance.timeOrigin + performance.now()) * 1000);
};

/** A physical clock tests move by hand. */
export class ManualPhysical {
  constructor(public micros: number) {}
  readonly read: PhysicalClock = () => this.micros;
  advance(micros: number): void {
    this.micros += micros;
  }
  set(micros: number): void {
    this.micros = micros;
  }
}

export class ClockOffsetError extends CairnError {
  override name = 'ClockOffsetError';
  constructor(remote: Timestamp, physical: number, maxOffsetMicros: number) {
    super(
      'hlc.clock_offset',
      `hlc: remote clock ${formatTimestamp(remote)} is ${(remote.wall - physical) / 1000} ms ahead of local physical time, beyond the max offset of ${maxOffsetMicros / 1000} ms`,
      { sqlState: '58000' },
    );
  }
}

export const DEFAULT_MAX_OFFSET_MICROS = 500_000;

export class Clock {
  private last: Timestamp = ZERO_TIMESTAMP;

  constructor(
    private physical: PhysicalClock,
    readonly maxOffsetMicros: number = DEFAULT_MAX_OFFSET_MICROS,
  ) {}

  /** The physical source's reading, without touching the HLC state. */
  physicalNow(): number {
    return this.physical();
  }

  /** Replaces the physical source (the jepsen-style suite's clock nemesis). */
  setPhysicalClock(physical: PhysicalClock): void {
    this.physical = physical;
  }

  /** A timestamp strictly greater than every one returned or observed before. */
  now(): Timestamp {
    const pt = this.physical();
    if (pt > this.last.wall) {
      this.last = { wall: pt, logical: 0 };
    } else {
      this.last = tsNext(this.last);
    }
    return this.last;
  }

  /** The latest timestamp handed out or observed, without advancing. */
  peek(): Timestamp {
    return this.last;
  }

  /**
   * Folds a timestamp received from another node into this clock. Throws
   * ClockOffsetError, leaving the clock unchanged, when the remote timestamp is
   * more than maxOffset ahead of local physical time.
   */
  update(remote: Timestamp): void {
    const pt = this.physical();
    if (this.maxOffsetMicros > 0 && remote.wall - pt > this.maxOffsetMicros) {
      throw new ClockOffsetError(remote, pt, this.maxOffsetMicros);
    }
    if (compareTimestamps(remote, this.last) > 0) this.last = remote;
  }
}

/**
 * Linearizability checking: the Wing & Gong search with Lowe's state cache ("Testing for
 * linearizability", 2017), as in Knossos' WGL checker and Porcupine.
 *
 * Problem. Given a history of operations on one object, each with an invocation and a
 * completion, find a total order that (a) respects real time — if A completed before B
 * was invoked, A comes first — and (b) is legal for the object's sequential model. An
 * indeterminate operation (info / no completion) has no completion: it may be placed
 * anywhere after its invocation, or omitted (it may never have happened). Failed
 * operations did not happen and are dropped; indeterminate operations that cannot change
 * state (reads) are dropped too (they constrain nothing).
 *
 * Search. Events form a doubly linked list in history order:
 *
 *     HEAD → call(a) → call(b) → ret(a) → call(c) → ret(b) → … → ret(pending…)
 *
 * Walking from HEAD, a call may be linearized now if the model accepts it; then the call
 * and its return are unlinked ("lifted") and the walk restarts at HEAD. Reaching a return
 * means its operation was not linearized before it completed, so the search pops the last
 * linearized call (restoring the list, dancing-links style) and tries the next candidate.
 * Returns of indeterminate operations sit after every real event, so the search succeeds
 * as soon as every completed operation is linearized.
 *
 * Cache. Two search states are the same when they have linearized the same set of
 * operations and reached an equal model state; a state seen before is never explored
 * again (Lowe). The set is a bitset (Uint32Array) whose identity is hashed incrementally
 * with Zobrist keys (two random 32-bit words per operation, XORed in and out), combined
 * with the model's state hash to key a Map of chains compared exactly (LinearizationCache).
 *
 * Reductions, each sound and complete (checked against brute force in the tests):
 *   - pruning: a model may drop indeterminate operations that provably need not be placed
 *     (the registers drop timed-out writes of values nothing observed);
 *   - blind writes (a register's write) are never placed right after an indeterminate
 *     operation: that order is equivalent to one without the indeterminate operation;
 *     cache entries remember whether they were reached under this restriction;
 *   - read forcing: a read-only candidate that succeeds in the current state is placed at
 *     once with no alternative tried (it changes nothing, and everything that completed
 *     before its invocation is already placed); if that fails, the level fails;
 *   - candidate order: within a run of calls between two returns, the operation that must
 *     complete soonest is tried first.
 * Together they cut the Porcupine etcd set from 1.2 M search steps to 58 k.
 *
 * P-compositionality (Herlihy & Wing): a history is linearizable iff each key's
 * sub-history is, so checkLinearizable splits by `op.key` and checks each separately.
 *
 * Budget: `maxSteps` (per key), `maxCacheBytes` (per key) and `deadlineMs` measured with
 * the injected `now`; running out of any yields `'unknown'`, never `true`.
 * Ownership: pure; ops are read, never mutated.
 */
import { Prng } from '../../src/util/index.js';
import type { History, PairedOp } from '../history/history.js';
import { pairHistory } from '../history/history.js';
import type { CheckResult, Validity } from './check-result.js';

/** A sequential specification. */
export interface Model<S> {
  readonly name: string;
  init(): S;
  /**
   * Applies the operation to `state`, returning the next state, or undefined if the
   * operation cannot take effect in `state` with the outcome it reported. For
   * indeterminate operations (`op.type === 'info'`) `op.value` is the invoked argument
   * and any outcome is acceptable. Must not mutate `state`.
   */
  step(state: S, op: PairedOp): S | undefined;
  /** 32-bit hash consistent with `equal`. */
  hash(state: S): number;
  equal(a: S, b: S): boolean;
  /** False for operations that never change state (reads): dropped when indeterminate. */
  mayMutate(op: PairedOp): boolean;
  /**
   * Optional: removes indeterminate operations that provably need not be linearized
   * (a linearization exists with them iff one exists without them). Receives the ok and
   * mutating-indeterminate operations; must return a subset.
   */
  prune?(ops: readonly PairedOp[]): readonly PairedOp[];
  /**
   * Optional: true for an operation that succeeds in every state and whose next state does
   * not depend on the current one (a register's write). Then an indeterminate operation
   * immediately followed by a blind write changed nothing anyone saw, and the search never
   * builds such orders (dropping the indeterminate operation gives an equivalent one).
   */
  isBlindWrite?(op: PairedOp): boolean;
  /** Optional: true for an operation that never changes the state (a read). */
  isReadOnly?(op: PairedOp): boolean;
}

/** A register's value: null before the first write. */
export type RegisterValue = number | string | null;

function hashScalar(v: RegisterValue): number {
  if (v === null) return 0x9e3779b9;
  if (typeof v === 'number') {
    let h = Math.imul((v | 0) ^ 0x5bd1e995, 0x1b873593) ^ Math.imul(Math.floor(v / 4294967296), 0x85ebca6b);
    h ^= h >>> 15;
    return h >>> 0;
  }
  let h = 0x811c9dc5;
  for (let i = 0; i < v.length; i++) h = Math.imul(h ^ v.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

function scalar(v: unknown): RegisterValue {
  return v === undefined ? null : (v as RegisterValue);
}

function registerStep(state: RegisterValue, op: PairedOp, cas: boolean): RegisterValue | undefined {
  switch (op.f) {
    case 'read':
      return op.type === 'info' || scalar(op.value) === state ? state : undefined;
    case 'write':
      return scalar(op.value);
    case 'cas': {
      if (!cas) return undefined;
      const [from, to] = op.value as [RegisterValue, RegisterValue];
      return from === state ? to : undefined;
    }
    default:
      return undefined;
  }
}

/**
 * Register pruning: an indeterminate write (or cas) of a value v that no ok read returns
 * and no remaining cas expects is dropped. Sound: were it linearized, the register would
 * hold v until the next write, and nothing that succeeds can observe v, so the
 * operations after it see the same states without it. Dropping one may unobserve
 * another cas's `from`, hence the fixpoint. Histories with many timeouts shrink a lot.
 */
function pruneUnobservedWrites(ops: readonly PairedOp[]): readonly PairedOp[] {
  let kept = ops;
  for (;;) {
    const observed = new Set<RegisterValue>([null]);
    for (const o of kept) {
      if (o.f === 'read' && o.type === 'ok') observed.add(scalar(o.value));
      if (o.f === 'cas') observed.add((o.value as [RegisterValue, RegisterValue])[0]);
    }
    const written = (o: PairedOp): RegisterValue => (o.f === 'cas' ? (o.value as [RegisterValue, RegisterValue])[1] : scalar(o.value));
    const next = kept.filter((o) => o.type !== 'info' || o.f === 'read' || observed.has(written(o)));
    if (next.length === kept.length) return kept;
    kept = next;
  }
}

function registerModel(name: string, cas: boolean): Model<RegisterValue> {
  return {
    name,
    init: () => null,
    step: (s, op) => registerStep(s, op, cas),
    hash: hashScalar,
    equal: (a, b) => a === b,
    mayMutate: (op) => op.f !== 'read',
    prune: pruneUnobservedWrites,
    isBlindWrite: (op) => op.f === 'write',
    isReadOnly: (op) => op.f === 'read',
  };
}

/** A register of scalars starting at null: read (value = result), write v, cas [from, to]. */
export const casRegister: Model<RegisterValue> = registerModel('cas-register', true);
/** A read/write register starting at null (cas operations are illegal). */
export const register: Model<RegisterValue> = registerModel('register', false);

export interface LinearizabilityOptions {
  /** Search steps allowed per key before giving up with 'unknown'. Default 50 million. */
  readonly maxSteps?: number;
  /** Memory for one key's search cache (linearized sets); default 512 MiB. */
  readonly maxCacheBytes?: number;
  /** Wall-clock budget for the whole check, in ms, measured with `now`. */
  readonly deadlineMs?: number;
  /** Monotonic ms clock, injected; default performance.now. */
  readonly now?: () => number;
}

/** Why a key's history is not linearizable. */
export interface LinearizabilityFailure {
  readonly key: string | number | undefined;
  /** The operation whose completion was reached without being able to linearize it. */
  readonly op: PairedOp;
  /** The longest legal order found (its last `explainTail` operations). */
  readonly linearized: readonly PairedOp[];
  /** The model state after `linearized`. */
  readonly state: unknown;
  /** How many operations the longest legal order held. */
  readonly depth: number;
}

export interface LinearizabilityResult extends CheckResult {
  readonly failures: readonly LinearizabilityFailure[];
}

/** Outcome of searching one key's sub-history. */
export interface KeySearchResult<S> {
  readonly valid: Validity;
  readonly steps: number;
  readonly cacheSize: number;
  readonly failure?: { op: PairedOp; linearized: PairedOp[]; state: S; depth: number };
}

/**
 * Lowe's cache of visited (linearized set, model state) pairs. Entries live in typed
 * arenas — the set's words, a second 32-bit hash and a chain link per entry — so the
 * only per-entry allocation is the model state itself; the Map is keyed by a small
 * integer (V8 keeps it unboxed) and chains collide rarely.
 */
class LinearizationCache<S> {
  private arena: Uint32Array;
  private link: Int32Array;
  private check: Int32Array;
  private flags: Uint8Array;
  private readonly states: S[] = [];
  private readonly heads = new Map<number, number>();
  size = 0;

  constructor(
    private readonly words: number,
    private readonly model: Model<S>,
    private readonly maxBytes: number,
  ) {
    this.arena = new Uint32Array(1024 * words);
    this.link = new Int32Array(1024);
    this.check = new Int32Array(1024);
    this.flags = new Uint8Array(1024);
  }

  /**
   * Adds the pair; false when it was already explored. h1/h2: Zobrist hashes of `bits`.
   * `constrained` (1) marks a state reached by an indeterminate operation, from which
   * blind writes may not follow: an unconstrained visit of the same pair covers it, but
   * not the other way round.
   */
  add(bits: Uint32Array, h1: number, h2: number, state: S, constrained: number): boolean {
    const key = (h1 ^ this.model.hash(state)) & 0x3fffffff;
    const head = this.heads.get(key);
    for (let e = head ?? -1; e !== -1; e = this.link[e]!) {
      if (this.check[e] !== h2 || (this.flags[e] === 1 && constrained === 0) || !this.model.equal(this.states[e]!, state)) continue;
      const off = e * this.words;
      let same = true;
      for (let w = 0; w < this.words && same; w++) same = this.arena[off + w] === bits[w];
      if (same) return false;
    }
    if (this.size === this.link.length) this.grow();
    if (this.full) return true;
    const e = this.size++;
    this.arena.set(bits, e * this.words);
    this.link[e] = head ?? -1;
    this.check[e] = h2;
    this.flags[e] = constrained;
    this.states.push(state);
    this.heads.set(key, e);
    return true;
  }

  /** Set when the cache would outgrow its memory budget; the search then gives up. */
  full = false;

  private grow(): void {
    const cap = this.link.length * 2;
    if (cap * this.words * 4 > this.maxBytes) {
      this.full = true;
      return;
    }
    const arena = new Uint32Array(cap * this.words);
    arena.set(this.arena);
    this.arena = arena;
    const link = new Int32Array(cap);
    link.set(this.link);
    this.link = link;
    const check = new Int32Array(cap);
    check.set(this.check);
    this.check = check;
    const flags = new Uint8Array(cap);
    flags.set(this.flags);
    this.flags = flags;
  }
}

const HEAD = 0;
const EXPLAIN_TAIL = 12;
const zobristPrng = new Prng(0x5eed1a);

/**
 * The WGL search over one object's operations (already paired; fail ops are ignored
 * here). `ops` order does not matter: events are ordered by history index.
 */
export function searchLinearization<S>(
  model: Model<S>,
  allOps: readonly PairedOp[],
  opts: { maxSteps: number; maxCacheBytes: number; deadline: number; now: () => number },
): KeySearchResult<S> {
  const candidates = allOps.filter((o) => o.type === 'ok' || (o.type === 'info' && model.mayMutate(o)));
  const ops = model.prune === undefined ? candidates : model.prune(candidates);
  const n = ops.length;
  const nCompleted = ops.reduce((c, o) => c + (o.type === 'ok' ? 1 : 0), 0);
  if (nCompleted === 0) return { valid: true, steps: 0, cacheSize: 0 };

  // Events: node 0 is HEAD; node 2i+1 = call of op i, 2i+2 = its return.
  type Ev = { node: number; at: number; tie: number };
  const evs: Ev[] = [];
  for (let i = 0; i < n; i++) {
    const o = ops[i]!;
    evs.push({ node: 2 * i + 1, at: o.invokeIndex, tie: 0 });
    evs.push({ node: 2 * i + 2, at: o.completeIndex, tie: 1 });
  }
  evs.sort((a, b) => a.at - b.at || a.tie - b.tie || a.node - b.node);
  // Within a run of calls between two returns the order is free (a call is a candidate
  // exactly while it precedes the first remaining return); trying the operation that must
  // complete soonest first cuts the search several-fold on the public histories.
  for (let i = 0; i < evs.length; ) {
    let j = i;
    while (j < evs.length && evs[j]!.tie === 0) j++;
    const run = evs.slice(i, j).sort((x, y) => ops[(x.node - 1) >>> 1]!.completeIndex - ops[(y.node - 1) >>> 1]!.completeIndex || x.node - y.node);
    evs.splice(i, run.length, ...run);
    i = j + 1;
  }
  const size = 2 * n + 1;
  const next = new Int32Array(size + 1);
  const prev = new Int32Array(size + 1);
  const NIL = size;
  let last = HEAD;
  for (const e of evs) {
    next[last] = e.node;
    prev[e.node] = last;
    last = e.node;
  }
  next[last] = NIL;
  prev[NIL] = last;

  const unlink = (x: number): void => {
    next[prev[x]!] = next[x]!;
    prev[next[x]!] = prev[x]!;
  };
  const relink = (x: number): void => {
    next[prev[x]!] = x;
    prev[next[x]!] = x;
  };

  // Zobrist keys for the linearized set.
  const z1 = new Int32Array(n);
  const z2 = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    z1[i] = zobristPrng.nextUint32() | 0;
    z2[i] = zobristPrng.nextUint32() | 0;
  }
  const words = (n + 31) >>> 5;
  const bits = new Uint32Array(words);
  let h1 = 0;
  let h2 = 0;
  const cache = new LinearizationCache<S>(words, model, opts.maxCacheBytes);
  const blind = new Uint8Array(n);
  const readOnly = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    blind[i] = model.isBlindWrite?.(ops[i]!) === true ? 1 : 0;
    readOnly[i] = model.isReadOnly?.(ops[i]!) === true ? 1 : 0;
  }
  const flip = (i: number): void => {
    bits[i >>> 5]! ^= 1 << (i & 31);
    h1 ^= z1[i]!;
    h2 ^= z2[i]!;
  };

  const stackNode: number[] = [];
  const stackState: S[] = [];
  const stackForced: boolean[] = [];
  let state = model.init();
  let done = 0;
  let steps = 0;
  let best: KeySearchResult<S>['failure'];
  const push = (node: number, s2: S, forced: boolean): void => {
    stackNode.push(node);
    stackState.push(state);
    stackForced.push(forced);
    state = s2;
    unlink(node);
    unlink(node + 1);
    if (ops[(node - 1) >>> 1]!.type === 'ok') done++;
  };
  /**
   * Pops back to the most recent free choice; returns the node to try next after it, or
   * -1 when the search is exhausted. A forced move failing fails its whole level.
   */
  const backtrack = (): number => {
    for (;;) {
      const top = stackNode.pop();
      if (top === undefined) return -1;
      state = stackState.pop()!;
      const forced = stackForced.pop()!;
      const i = (top - 1) >>> 1;
      flip(i);
      relink(top + 1);
      relink(top);
      if (ops[i]!.type === 'ok') done--;
      if (!forced) return next[top]!;
    }
  };
  /**
   * Read-only operations that succeed in the current state are linearized at once, with
   * no alternative tried: placing such an operation now is never worse than later (it
   * changes nothing, and everything that completed before its invocation is already
   * placed, or it would not be a candidate). Returns false when a forced state was
   * already explored (so this level fails).
   */
  const forceReads = (): boolean => {
    for (let e = next[HEAD]!; (e & 1) === 1 && e !== NIL; ) {
      const i = (e - 1) >>> 1;
      const s2 = readOnly[i] === 1 ? model.step(state, ops[i]!) : undefined;
      if (s2 === undefined) {
        e = next[e]!;
        continue;
      }
      flip(i);
      if (!cache.add(bits, h1, h2, s2, 0)) {
        flip(i);
        return false;
      }
      push(e, s2, true);
      e = next[HEAD]!;
    }
    return true;
  };
  let entry = forceReads() ? next[HEAD]! : backtrack();
  for (;;) {
    if (done === nCompleted) return { valid: true, steps, cacheSize: cache.size };
    if (entry === -1) return { valid: false, steps, cacheSize: cache.size, failure: best };
    if (++steps > opts.maxSteps || cache.full || ((steps & 0xfff) === 1 && opts.now() > opts.deadline)) {
      return { valid: 'unknown', steps, cacheSize: cache.size };
    }
    if ((entry & 1) === 1) {
      const i = (entry - 1) >>> 1;
      const op = ops[i]!;
      const afterInfo = stackNode.length > 0 && ops[(stackNode[stackNode.length - 1]! - 1) >>> 1]!.type === 'info';
      const s2 = afterInfo && blind[i] === 1 ? undefined : model.step(state, op);
      if (s2 !== undefined) {
        flip(i);
        if (cache.add(bits, h1, h2, s2, op.type === 'info' ? 1 : 0)) {
          push(entry, s2, false);
          entry = forceReads() ? next[HEAD]! : backtrack();
          continue;
        }
        flip(i);
      }
      entry = next[entry]!;
      continue;
    }
    // A return: its operation was not linearized in time. Backtrack.
    if (best === undefined || stackNode.length > best.depth) {
      const tail = stackNode.slice(-EXPLAIN_TAIL).map((x) => ops[(x - 1) >>> 1]!);
      best = { op: ops[(entry - 2) >>> 1]!, linearized: tail, state, depth: stackNode.length };
    }
    entry = backtrack();
  }
}

/** Groups ops by key, preserving order. */
export function splitByKey<T extends { key: string | number | undefined }>(ops: readonly T[]): Map<string | number | undefined, T[]> {
  const m = new Map<string | number | undefined, T[]>();
  for (const o of ops) {
    let l = m.get(o.key);
    if (l === undefined) m.set(o.key, (l = []));
    l.push(o);
  }
  return m;
}

/**
 * Checks a whole history against `model`, key by key. Valid is false if any key is not
 * linearizable, else 'unknown' if any key ran out of budget, else true.
 */
export function checkLinearizable<S>(model: Model<S>, history: History, options: LinearizabilityOptions = {}): LinearizabilityResult {
  const now = options.now ?? (() => performance.now());
  const start = now();
  const deadline = options.deadlineMs === undefined ? Infinity : start + options.deadlineMs;
  const maxSteps = options.maxSteps ?? 50_000_000;
  const maxCacheBytes = options.maxCacheBytes ?? 512 * 1024 * 1024;
  const byKey = splitByKey(pairHistory(history));
  const failures: LinearizabilityFailure[] = [];
  const unknownKeys: (string | number | undefined)[] = [];
  let steps = 0;
  let cacheSize = 0;
  let ops = 0;
  for (const [key, keyOps] of byKey) {
    ops += keyOps.length;
    const r = searchLinearization(model, keyOps, { maxSteps, maxCacheBytes, deadline, now });
    steps += r.steps;
    cacheSize += r.cacheSize;
    if (r.valid === 'unknown') unknownKeys.push(key);
    else if (!r.valid) {
      const f = r.failure!;
      failures.push({ key, op: f.op, linearized: f.linearized, state: f.state, depth: f.depth });
    }
  }
  const valid: Validity = failures.length > 0 ? false : unknownKeys.length > 0 ? 'unknown' : true;
  const anomalies: Record<string, unknown[]> = {};
  if (failures.length > 0) anomalies['nonlinearizable'] = failures;
  if (unknownKeys.length > 0) anomalies['budget-exhausted'] = unknownKeys;
  return {
    valid,
    anomalyTypes: Object.keys(anomalies),
    anomalies,
    failures,
    stats: { keys: byKey.size, ops, steps, cacheSize, elapsedMs: now() - start },
  };
}

/** A Checker for register workloads (per-key read/write/cas). */
export function linearizableChecker<S>(model: Model<S>, options: LinearizabilityOptions = {}) {
  return { name: `linearizable(${model.name})`, check: (h: History) => checkLinearizable(model, h, options) };
}

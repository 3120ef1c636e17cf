/**
 * Transaction dependency graphs (Adya's DSG, as used by Elle) and the cycle searches the
 * isolation checkers run on them.
 *
 * Nodes are dense integers (0 … n-1, one per transaction). An edge a → b carries a bit
 * set of relations; several relations between the same pair share one edge:
 *
 *     WW  a wrote a version, b wrote the next one          (write dependency)
 *     WR  b read a version a wrote                          (read dependency)
 *     RW  a read a version, b wrote the next one            (anti-dependency)
 *     PROCESS   a and b ran on the same client, a first
 *     REALTIME  a completed before b was invoked
 *
 * Cycle classification (Adya; Elle §4): by the data edges on the cycle —
 *     only WW → G0;  WW/WR with ≥ 1 WR → G1c;  exactly one RW → G-single;  ≥ 2 RW → G2-item
 * with the suffix `-realtime` if a REALTIME edge is needed to close the cycle, else
 * `-process` if a PROCESS edge is. Self edges are never stored.
 *
 * Searches: Tarjan's strongly connected components (iterative, over the edges whose
 * relation intersects a mask), and shortest paths by BFS restricted to one component;
 * a shortest cycle through edge a → b is a → b plus the shortest path b ⇝ a.
 */
import { assert } from '../../src/util/index.js';

export const WW = 1;
export const WR = 2;
export const RW = 4;
export const PROCESS = 8;
export const REALTIME = 16;
export const DATA = WW | WR | RW;
export const ALL = DATA | PROCESS | REALTIME;

/** Label preference when an edge carries several relations: the most specific first. */
const LABEL_ORDER = [WW, WR, RW, PROCESS, REALTIME] as const;

export type RelName = 'ww' | 'wr' | 'rw' | 'process' | 'realtime';

export function relName(rel: number): RelName {
  switch (rel) {
    case WW:
      return 'ww';
    case WR:
      return 'wr';
    case RW:
      return 'rw';
    case PROCESS:
      return 'process';
    case REALTIME:
      return 'realtime';
    default:
      assert(false, `graph: ${rel} is not a single relation`);
  }
}

export class DepGraph {
  private readonly out: Map<number, number>[];
  private edgeCount = 0;

  constructor(readonly size: number) {
    this.out = Array.from({ length: size }, () => new Map());
  }

  /** Adds `rel` to the edge from → to (ignored when from === to). */
  addEdge(from: number, to: number, rel: number): void {
    if (from === to) return;
    const m = this.out[from]!;
    const had = m.get(to);
    if (had === undefined) this.edgeCount++;
    m.set(to, (had ?? 0) | rel);
  }

  rels(from: number, to: number): number {
    return this.out[from]!.get(to) ?? 0;
  }

  successors(from: number): ReadonlyMap<number, number> {
    return this.out[from]!;
  }

  get edges(): number {
    return this.edgeCount;
  }
}

/**
 * Strongly connected components of the subgraph of edges whose relations intersect
 * `mask`; only components with two or more nodes are returned (self edges do not exist).
 * `compOf` (if given, length = size) is filled with each node's component index or -1.
 */
export function stronglyConnectedComponents(g: DepGraph, mask: number, compOf?: Int32Array): number[][] {
  const n = g.size;
  const index = new Int32Array(n).fill(-1);
  const low = new Int32Array(n);
  const onStack = new Uint8Array(n);
  const stack: number[] = [];
  const result: number[][] = [];
  if (compOf !== undefined) compOf.fill(-1);
  let counter = 0;
  // Explicit DFS stack of (node, iterator over successors).
  const work: { v: number; it: Iterator<[number, number]> }[] = [];
  for (let root = 0; root < n; root++) {
    if (index[root] !== -1) continue;
    index[root] = low[root] = counter++;
    stack.push(root);
    onStack[root] = 1;
    work.push({ v: root, it: g.successors(root).entries() });
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      const v = top.v;
      let descended = false;
      for (let r = top.it.next(); !r.done; r = top.it.next()) {
        const [w, rel] = r.value;
        if ((rel & mask) === 0) continue;
        if (index[w] === -1) {
          index[w] = low[w] = counter++;
          stack.push(w);
          onStack[w] = 1;
          work.push({ v: w, it: g.successors(w).entries() });
          descended = true;
          break;
        } else if (onStack[w] === 1 && index[w]! < low[v]!) {
          low[v] = index[w]!;
        }
      }
      if (descended) continue;
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1]!.v;
        if (low[v]! < low[parent]!) low[parent] = low[v]!;
      }
      if (low[v] === index[v]) {
        const comp: number[] = [];
        let w: number;
        do {
          w = stack.pop()!;
          onStack[w] = 0;
          comp.push(w);
        } while (w !== v);
        if (comp.length > 1) {
          if (compOf !== undefined) for (const x of comp) compOf[x] = result.length;
          result.push(comp);
        }
      }
    }
  }
  return result;
}

/**
 * Shortest path from → to over edges intersecting `mask`, visiting only nodes whose
 * `compOf` equals `comp`. Returns the node list [from, …, to], or undefined. `visits`
 * counts edge inspections (for the caller's budget).
 */
export function shortestPath(
  g: DepGraph,
  from: number,
  to: number,
  mask: number,
  compOf: Int32Array,
  comp: number,
  visits: { count: number },
): number[] | undefined {
  const parent = new Map<number, number>([[from, from]]);
  let frontier = [from];
  while (frontier.length > 0) {
    const nextFrontier: number[] = [];
    for (const v of frontier) {
      for (const [w, rel] of g.successors(v)) {
        visits.count++;
        if ((rel & mask) === 0 || compOf[w] !== comp || parent.has(w)) continue;
        parent.set(w, v);
        if (w === to) {
          const path = [to];
          for (let x = to; x !== from; ) path.push((x = parent.get(x)!));
          return path.reverse();
        }
        nextFrontier.push(w);
      }
    }
    frontier = nextFrontier;
  }
  return undefined;
}

/** One step of a cycle: from → to by relation `rel` (a single bit). */
export interface CycleStep {
  readonly from: number;
  readonly to: number;
  readonly rel: number;
}

/**
 * Labels the closed walk `nodes` (first node not repeated at the end) with one relation
 * per step, choosing within `mask` by LABEL_ORDER; `forced` fixes the first step's label.
 */
export function labelCycle(g: DepGraph, nodes: readonly number[], mask: number, forced?: number): CycleStep[] {
  const steps: CycleStep[] = [];
  for (let i = 0; i < nodes.length; i++) {
    const from = nodes[i]!;
    const to = nodes[(i + 1) % nodes.length]!;
    const rels = g.rels(from, to) & mask;
    assert(rels !== 0, `graph: no edge ${from} → ${to} within mask ${mask}`);
    const rel = i === 0 && forced !== undefined ? forced : LABEL_ORDER.find((r) => (rels & r) !== 0)!;
    assert((rels & rel) !== 0, `graph: edge ${from} → ${to} lacks forced relation ${rel}`);
    steps.push({ from, to, rel });
  }
  return steps;
}

/** Adya/Elle name of a cycle's anomaly (see the header). */
export function classifyCycle(steps: readonly CycleStep[]): string {
  let rw = 0;
  let wr = false;
  let realtime = false;
  let process = false;
  for (const s of steps) {
    if (s.rel === RW) rw++;
    else if (s.rel === WR) wr = true;
    else if (s.rel === REALTIME) realtime = true;
    else if (s.rel === PROCESS) process = true;
  }
  const base = rw === 0 ? (wr ? 'G1c' : 'G0') : rw === 1 ? 'G-single' : 'G2-item';
  return base + (realtime ? '-realtime' : process ? '-process' : '');
}

export interface CycleSearchOptions {
  /** Edge inspections allowed for the targeted (G-single / realtime) searches. */
  readonly budget?: number;
}

export interface FoundCycle {
  readonly type: string;
  readonly steps: readonly CycleStep[];
}

/**
 * Finds example cycles of every class present, in Elle's order: G0 in the WW graph,
 * G1c in WW|WR, G-single / G2-item in WW|WR|RW, then the process/realtime variants in
 * the full graph. Every non-trivial component of the full graph yields at least one
 * cycle, so a cyclic graph is never reported acyclic; the budget only limits how hard
 * the search tries to find the *weakest* class (a G-single may then be reported as the
 * G2-item cycle through the same component). One cycle per component and class.
 */
export function findCycles(g: DepGraph, opts: CycleSearchOptions = {}): { cycles: FoundCycle[]; sccs: number; truncated: boolean } {
  const visits = { count: 0 };
  const budget = opts.budget ?? 20_000_000;
  const compOf = new Int32Array(g.size);
  const cycles: FoundCycle[] = [];
  let sccs = 0;
  let truncated = false;

  const push = (nodes: number[], mask: number, forced?: number): void => {
    const steps = labelCycle(g, nodes, mask, forced);
    cycles.push({ type: classifyCycle(steps), steps });
  };
  /** Cycle through a → b closed by the shortest b ⇝ a over `pathMask`. */
  const through = (a: number, b: number, pathMask: number, comp: number): number[] | undefined => {
    const p = shortestPath(g, b, a, pathMask, compOf, comp, visits);
    return p === undefined ? undefined : [a, ...p.slice(0, -1)];
  };
  /** Internal edges of component `comp` having a relation in `want` and none in `avoid`. */
  const internal = function* (comp: number[], c: number, want: number, avoid: number): Generator<[number, number]> {
    for (const a of comp) {
      for (const [b, rel] of g.successors(a)) {
        if (compOf[b] === c && (rel & want) !== 0 && (rel & avoid) === 0) yield [a, b];
      }
    }
  };

  // G0: cycles of write dependencies.
  const g0 = stronglyConnectedComponents(g, WW, compOf);
  g0.forEach((comp, c) => {
    const [a, b] = internal(comp, c, WW, 0).next().value as [number, number];
    push(through(a, b, WW, c)!, WW);
  });
  // G1c: write and read dependencies, with at least one read dependency.
  const g1 = stronglyConnectedComponents(g, WW | WR, compOf);
  g1.forEach((comp, c) => {
    const e = internal(comp, c, WR, WW).next();
    if (e.done === true) return; // all-WW: already a G0 component
    const [a, b] = e.value;
    push(through(a, b, WW | WR, c)!, WW | WR, WR);
  });
  // G-single (exactly one anti-dependency), else G2-item.
  const g2 = stronglyConnectedComponents(g, DATA, compOf);
  sccs = g2.length;
  g2.forEach((comp, c) => {
    let first: [number, number] | undefined;
    for (const [a, b] of internal(comp, c, RW, WW | WR)) {
      first ??= [a, b];
      if (visits.count > budget) {
        truncated = true;
        break;
      }
      const cyc = through(a, b, WW | WR, c);
      if (cyc !== undefined) {
        push(cyc, DATA, RW);
        return;
      }
    }
    if (first !== undefined) push(through(first[0], first[1], DATA, c)!, DATA, RW);
  });
  // Realtime / process variants: cycles that need a non-data edge.
  const full = stronglyConnectedComponents(g, ALL, compOf);
  full.forEach((comp, c) => {
    const e = internal(comp, c, PROCESS | REALTIME, DATA).next();
    if (e.done === true) return;
    const [a, b] = e.value;
    const rel = (g.rels(a, b) & PROCESS) !== 0 ? PROCESS : REALTIME;
    push(through(a, b, ALL, c)!, ALL, rel);
  });
  return { cycles, sccs: sccs + full.length, truncated };
}

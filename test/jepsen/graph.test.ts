// The dependency graph and its cycle searches (Adya's DSG; Elle §4), checked against a
// simple reference: plain DFS cycle detection on the same edge subsets.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import {
  ALL, DATA, DepGraph, PROCESS, REALTIME, RW, WR, WW,
  classifyCycle, findCycles, stronglyConnectedComponents,
} from '../../jepsen-style/checkers/graph.js';

const REL = [WW, WR, RW, PROCESS, REALTIME];

const graphs = fc
  .record({
    n: fc.integer({ min: 1, max: 12 }),
    edges: fc.array(fc.tuple(fc.nat(11), fc.nat(11), fc.constantFrom(...REL)), { maxLength: 30 }),
  })
  .map(({ n, edges }) => {
    const g = new DepGraph(n);
    for (const [a, b, r] of edges) g.addEdge(a % n, b % n, r);
    return g;
  });

/** Reference: does the subgraph of edges within `mask` have a cycle? (DFS colouring) */
function hasCycle(g: DepGraph, mask: number): boolean {
  const colour = new Uint8Array(g.size);
  const visit = (v: number): boolean => {
    colour[v] = 1;
    for (const [w, rel] of g.successors(v)) {
      if ((rel & mask) === 0) continue;
      if (colour[w] === 1 || (colour[w] === 0 && visit(w))) return true;
    }
    colour[v] = 2;
    return false;
  };
  for (let v = 0; v < g.size; v++) if (colour[v] === 0 && visit(v)) return true;
  return false;
}

/** Reference: is there an rw edge a → b with a path b ⇝ a over ww/wr edges? */
function hasSingleRwCycle(g: DepGraph): boolean {
  const reaches = (from: number, to: number): boolean => {
    const seen = new Set([from]);
    const stack = [from];
    while (stack.length > 0) {
      const v = stack.pop()!;
      if (v === to) return true;
      for (const [w, rel] of g.successors(v)) {
        if ((rel & (WW | WR)) !== 0 && !seen.has(w)) {
          seen.add(w);
          stack.push(w);
        }
      }
    }
    return false;
  };
  for (let a = 0; a < g.size; a++) {
    for (const [b, rel] of g.successors(a)) if ((rel & RW) !== 0 && reaches(b, a)) return true;
  }
  return false;
}

describe('graph', () => {
  it('classifies cycles by their edges (Adya; Elle)', () => {
    const c = (...rels: number[]) => classifyCycle(rels.map((rel, i) => ({ from: i, to: i + 1, rel })));
    expect(c(WW, WW)).toBe('G0');
    expect(c(WW, WR)).toBe('G1c');
    expect(c(WR, RW)).toBe('G-single');
    expect(c(RW, RW, WW)).toBe('G2-item');
    expect(c(RW, REALTIME)).toBe('G-single-realtime');
    expect(c(WW, PROCESS)).toBe('G0-process');
    expect(c(WR, PROCESS, REALTIME)).toBe('G1c-realtime');
  });

  it('finds SCCs exactly when the reference finds a cycle, for every edge subset', () => {
    fc.assert(
      fc.property(graphs, (g) => {
        for (const mask of [WW, WW | WR, DATA, ALL]) {
          expect(stronglyConnectedComponents(g, mask).length > 0).toBe(hasCycle(g, mask));
        }
      }),
      { numRuns: 500 },
    );
  });

  it('reports only real cycles, with the right classes, and never misses one', () => {
    fc.assert(
      fc.property(graphs, (g) => {
        const { cycles } = findCycles(g);
        for (const c of cycles) {
          // A closed walk whose every step is an existing edge with that relation.
          c.steps.forEach((s, i) => {
            expect(g.rels(s.from, s.to) & s.rel).toBe(s.rel);
            expect(c.steps[(i + 1) % c.steps.length]!.from).toBe(s.to);
          });
          expect(classifyCycle(c.steps)).toBe(c.type);
        }
        const types = cycles.map((c) => c.type);
        const dataCycle = types.some((t) => !/-(realtime|process)$/.test(t));
        expect(dataCycle).toBe(hasCycle(g, DATA));
        expect(types.includes('G0')).toBe(hasCycle(g, WW));
        if (hasCycle(g, WW | WR) && !hasCycle(g, WW)) expect(types).toContain('G1c');
        expect(cycles.length > 0).toBe(hasCycle(g, ALL));
        // A cycle with at most one anti-dependency is never reported only as G2-item.
        if (hasSingleRwCycle(g)) expect(types.some((t) => t === 'G0' || t === 'G1c' || t === 'G-single')).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('prefers a G-single over a G2-item in the same component', () => {
    // 0 -rw-> 1 -wr-> 0 (G-single) and 0 -rw-> 2 -rw-> 0 (G2-item) share node 0.
    const g = new DepGraph(3);
    g.addEdge(0, 2, RW);
    g.addEdge(2, 0, RW);
    g.addEdge(0, 1, RW);
    g.addEdge(1, 0, WR);
    expect(findCycles(g).cycles.map((c) => c.type)).toEqual(['G-single']);
  });
});

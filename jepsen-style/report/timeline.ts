/**
 * timeline.html: a self-contained page (inline SVG, no scripts) with
 *   1. operations by client lane over time — a bar from invoke to completion, green ok,
 *      pink fail, amber info (info bars run to the end: they may apply at any time);
 *   2. latency over time — one dot per completed operation, log scale, same colours;
 * both with the fault windows shaded grey and labelled.
 *
 *   lane 0 │ ▆▆ ▆▆▆ ▆ ▆▆▆▆ ░░░░░░░░░░▆▆ …     x: seconds since the run began
 *   lane 1 │ ▆ ▆▆ ▆▆▆▆▆ ▆ ░░░(fault)░░░ …
 * Lanes are worker slots (process mod concurrency). At most `maxOps` operations are
 * drawn (evenly sampled) to keep the file small.
 */
import type { History } from '../history/history.js';
import { pairHistory } from '../history/history.js';

export interface FaultWindow {
  readonly description: string;
  readonly nodes: readonly number[];
  readonly startNs: number;
  readonly endNs: number;
  readonly evidence: readonly string[];
  /** Client errors / indeterminate outcomes completing in the window (+1 s). */
  clientErrors: number;
  /** Whether the fault visibly took effect. */
  bit: boolean;
}

export interface TimelineOptions {
  readonly title: string;
  readonly concurrency: number;
  readonly maxOps?: number;
}

const COLOR = { ok: '#3a3', fail: '#e58', info: '#fa0' } as const;

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

export function renderTimeline(history: History, faults: readonly FaultWindow[], opts: TimelineOptions): string {
  const pairs = pairHistory(history);
  const end = Math.max(1, history.length === 0 ? 1 : history[history.length - 1]!.time);
  const W = 1200;
  const left = 60;
  const laneH = 14;
  const lanes = Math.max(1, opts.concurrency);
  const H1 = lanes * laneH + 30;
  const H2 = 220;
  const x = (ns: number): number => left + ((W - left - 10) * Math.min(ns, end)) / end;
  const maxOps = opts.maxOps ?? 30_000;
  const step = Math.max(1, Math.ceil(pairs.length / maxOps));
  const shade = (h: number): string =>
    faults
      .map((f) => `<rect x="${x(f.startNs).toFixed(1)}" y="0" width="${Math.max(1, x(f.endNs) - x(f.startNs)).toFixed(1)}" height="${h}" fill="#000" opacity="0.08"><title>${esc(f.description)}\n${esc(f.evidence.join('\n'))}</title></rect>`)
      .join('');
  const axis = (h: number): string => {
    const secs = end / 1e9;
    const tick = secs <= 20 ? 1 : secs <= 120 ? 10 : 30;
    let s = '';
    for (let t = 0; t <= secs; t += tick) s += `<line x1="${x(t * 1e9)}" x2="${x(t * 1e9)}" y1="${h - 15}" y2="${h - 10}" stroke="#888"/><text x="${x(t * 1e9)}" y="${h - 1}" font-size="9" text-anchor="middle">${t}s</text>`;
    return s;
  };
  let bars = '';
  let dots = '';
  // A loop, not Math.max(...all): spreading 100 000+ latencies overflows the stack.
  let maxLat = 1e6;
  for (let i = 0; i < pairs.length; i++) {
    const p = pairs[i]!;
    if (typeof p.process === 'number' && p.type !== 'info') maxLat = Math.max(maxLat, p.completeTime - p.invokeTime);
  }
  const minLat = 1e5;
  const y2 = (ns: number): number => H2 - 20 - ((H2 - 30) * Math.log10(Math.max(ns, minLat) / minLat)) / Math.log10(maxLat / minLat);
  for (let i = 0; i < pairs.length; i += step) {
    const p = pairs[i]!;
    if (typeof p.process !== 'number') continue;
    const lane = p.process % lanes;
    const x0 = x(p.invokeTime);
    const x1 = p.type === 'info' ? x(end) : x(p.completeTime);
    bars += `<rect x="${x0.toFixed(1)}" y="${lane * laneH + 2}" width="${Math.max(0.5, x1 - x0).toFixed(1)}" height="${laneH - 4}" fill="${COLOR[p.type]}"${p.type === 'info' ? ' opacity="0.35"' : ''}/>`;
    if (p.type !== 'info') dots += `<circle cx="${x(p.completeTime).toFixed(1)}" cy="${y2(p.completeTime - p.invokeTime).toFixed(1)}" r="1.2" fill="${COLOR[p.type]}"/>`;
  }
  const latTicks = [1e5, 1e6, 1e7, 1e8, 1e9, 1e10]
    .filter((t) => t <= maxLat * 1.01)
    .map((t) => `<text x="${left - 4}" y="${y2(t) + 3}" font-size="9" text-anchor="end">${t / 1e6} ms</text><line x1="${left}" x2="${W - 10}" y1="${y2(t)}" y2="${y2(t)}" stroke="#eee"/>`)
    .join('');
  const laneLabels = Array.from({ length: lanes }, (_, l) => `<text x="${left - 4}" y="${l * laneH + 11}" font-size="9" text-anchor="end">client ${l}</text>`).join('');
  const faultRows = faults
    .map((f) => `<tr><td>${(f.startNs / 1e9).toFixed(1)}–${(f.endNs / 1e9).toFixed(1)} s</td><td>${esc(f.description)}</td><td>${f.bit ? 'yes' : '<b>did nothing visible</b>'}</td><td>${f.clientErrors}</td><td>${esc(f.evidence.join('; '))}</td></tr>`)
    .join('');
  return `<!doctype html><html><head><meta charset="utf-8"><title>${esc(opts.title)}</title>
<style>body{font:13px sans-serif;margin:20px}td{border-top:1px solid #ddd;padding:2px 6px;vertical-align:top}</style></head><body>
<h3>${esc(opts.title)}</h3>
<p><span style="color:${COLOR.ok}">■ ok</span> <span style="color:${COLOR.fail}">■ fail</span> <span style="color:${COLOR.info}">■ info</span> — grey: fault windows${step > 1 ? ` — every ${step}th operation drawn` : ''}</p>
<h4>Operations by client</h4>
<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H1}" id="ops">${shade(H1)}${laneLabels}${bars}${axis(H1)}</svg>
<h4>Latency</h4>
<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H2}" id="latency">${shade(H2)}${latTicks}${dots}${axis(H2)}</svg>
<h4>Faults</h4>
<table><tr><th>window</th><th>fault</th><th>bit</th><th>client errors</th><th>evidence</th></tr>${faultRows}</table>
</body></html>
`;
}

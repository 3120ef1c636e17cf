/**
 * Output helpers shared by the benches: a plain-text/markdown table, the
 * Cairn-to-comparison ratio cell, latency percentiles over several
 * HdrHistograms merged (the workload tool exports each op type's histogram
 * in compressed base64, µs), and a grouped-bar SVG panel.
 *
 * Ownership: pure functions; nothing here does I/O.
 */
import * as hdr from 'hdr-histogram-js';

/** A markdown table (also readable as plain text). */
export function mdTable(header: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const lines = [`| ${header.join(' | ')} |`, `|${header.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`];
  for (const r of rows) lines.push(`| ${r.map(String).join(' | ')} |`);
  return lines.join('\n') + '\n';
}

/** "0.42×" (a / b), or "–" when either side is missing. */
export function ratio(a: number | undefined, b: number | undefined): string {
  if (a === undefined || b === undefined || b === 0) return '–';
  return `${(a / b).toFixed(2)}×`;
}

export interface Percentiles {
  readonly p50Ms: number;
  readonly p95Ms: number;
  readonly p99Ms: number;
}

/** p50/p95/p99 (ms) of several compressed-base64 histograms (µs) taken together. */
export function mergedPercentiles(histograms: readonly string[]): Percentiles {
  if (histograms.length === 0) return { p50Ms: 0, p95Ms: 0, p99Ms: 0 };
  const acc = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: 3 });
  for (const h of histograms) acc.add(hdr.decodeFromCompressedBase64(h));
  const at = (p: number): number => Math.round(acc.getValueAtPercentile(p)) / 1000;
  const out = { p50Ms: at(50), p95Ms: at(95), p99Ms: at(99) };
  acc.destroy();
  return out;
}

export const COLORS = ['#4e79a7', '#e15759', '#59a14f', '#f28e2b'];

/**
 * One panel of grouped bars: `groups` along x, one bar per series; returns
 * SVG elements positioned at x0 (width w, height h, baseline at h).
 */
export function barPanel(x0: number, w: number, h: number, title: string, groups: readonly string[], series: readonly string[], value: (g: number, s: number) => number | undefined, unit: string): string[] {
  const pad = 44;
  const parts: string[] = [];
  const values = groups.flatMap((_, g) => series.map((_, s) => value(g, s) ?? 0));
  const max = Math.max(1e-9, ...values);
  parts.push(`<text x="${x0 + w / 2}" y="20" text-anchor="middle" font-size="14">${title}</text>`);
  parts.push(`<line x1="${x0 + pad}" y1="${h}" x2="${x0 + w - 10}" y2="${h}" stroke="#333"/>`);
  parts.push(`<text x="${x0 + pad - 4}" y="44" text-anchor="end" font-size="10">${max >= 10 ? Math.round(max) : max.toFixed(1)}</text>`);
  const groupW = (w - pad - 10) / Math.max(1, groups.length);
  const barW = (groupW * 0.8) / Math.max(1, series.length);
  groups.forEach((gname, g) => {
    const gx = x0 + pad + g * groupW + groupW * 0.1;
    parts.push(`<text x="${(gx + groupW * 0.4).toFixed(1)}" y="${h + 16}" text-anchor="middle" font-size="11">${gname}</text>`);
    series.forEach((sname, s) => {
      const v = value(g, s);
      if (v === undefined) return;
      const bh = ((h - 40) * v) / max;
      parts.push(
        `<rect x="${(gx + s * barW).toFixed(1)}" y="${(h - bh).toFixed(1)}" width="${Math.max(1, barW - 2).toFixed(1)}" height="${bh.toFixed(1)}" fill="${COLORS[s % COLORS.length]}"><title>${sname} ${gname}: ${v.toFixed(1)} ${unit}</title></rect>`,
      );
    });
  });
  return parts;
}

/** A whole SVG document of panels side by side with a legend under them. */
export function svgDocument(panels: readonly string[][], panelW: number, panelH: number, legend: readonly string[]): string {
  const parts = panels.flat();
  legend.forEach((name, i) => {
    parts.push(`<rect x="${10 + i * 140}" y="${panelH + 30}" width="12" height="12" fill="${COLORS[i % COLORS.length]}"/>`);
    parts.push(`<text x="${28 + i * 140}" y="${panelH + 41}" font-size="12">${name}</text>`);
  });
  const w = panelW * panels.length + 20 * (panels.length - 1);
  const h = panelH + 50;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif">\n<rect width="${w}" height="${h}" fill="white"/>\n${parts.join('\n')}\n</svg>\n`;
}

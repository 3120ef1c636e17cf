/**
 * Durations on the command line: "60s", "2m", "1h", "500ms", "1m30s", or a
 * bare number of seconds. Returned in milliseconds.
 */
import { CairnError } from '../util/errors.js';

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

export function parseDuration(text: string): number {
  const s = text.trim();
  if (/^\d+(\.\d+)?$/.test(s)) return Math.round(Number(s) * 1000);
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let end = 0;
  for (let m = re.exec(s); m !== null; m = re.exec(s)) {
    total += Number(m[1]) * (UNIT_MS[m[2] as string] as number);
    end = re.lastIndex;
  }
  if (s.length === 0 || end !== s.length) {
    throw new CairnError('workload.bad_flag', `workload: cannot parse duration "${text}" (e.g. 60s, 2m, 500ms)`);
  }
  return Math.round(total);
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
}

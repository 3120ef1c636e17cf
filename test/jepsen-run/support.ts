// Shared helpers of the jepsen-run tests: a temporary store directory and the run files.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function tempStore(): string {
  return mkdtempSync(join(tmpdir(), 'cairn-jepsen-run-'));
}

export const RUN_FILES = ['history.jsonl', 'nemesis.log', 'seed', 'results.json', 'timeline.html', 'node1.log'] as const;

export function missingFiles(dir: string): string[] {
  return RUN_FILES.filter((f) => !existsSync(join(dir, f)));
}

export function readResults(dir: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')) as Record<string, unknown>;
}

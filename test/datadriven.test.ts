import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runDataDriven, type TestCase } from './support/datadriven.js';

function echo(tc: TestCase): string {
  if (tc.cmdArgs.length === 0) return 'one\n\ntwo';
  return [tc.cmdArgs.map((a) => `${a.key}=[${a.vals.join(',')}]`).join(' '), tc.input].join('\n');
}

describe('datadriven runner', () => {
  it('runs a transcript, including doubled separators', async () => {
    await runDataDriven(join(import.meta.dirname, 'testdata/datadriven-selftest.txt'), echo);
  });

  it('fails on a mismatch and rewrites with REWRITE=1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dd-'));
    const path = join(dir, 't.txt');
    writeFileSync(path, 'echo x=1\n----\nwrong\n');
    await expect(runDataDriven(path, echo)).rejects.toThrow(/t\.txt:1: echo/);
    process.env['REWRITE'] = '1';
    try {
      await runDataDriven(path, echo);
    } finally {
      delete process.env['REWRITE'];
    }
    expect(readFileSync(path, 'utf8')).toBe('echo x=1\n----\nx=[1]\n');
    await runDataDriven(path, echo);
  });

  it('writes an empty output with a single separator', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dd-'));
    const path = join(dir, 't.txt');
    writeFileSync(path, 'noop\n----\n');
    process.env['REWRITE'] = '1';
    try {
      await runDataDriven(path, () => '');
    } finally {
      delete process.env['REWRITE'];
    }
    expect(readFileSync(path, 'utf8')).toBe('noop\n----\n');
  });
});

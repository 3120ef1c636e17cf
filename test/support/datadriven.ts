/**
 * A datadriven test runner in the style of cockroachdb/datadriven.
 *
 * A test file is a sequence of directives:
 *
 *     # comments and blank lines between directives are kept verbatim
 *     put k=a v=1 ts=5
 *     optional input lines
 *     ----
 *     expected output, up to the first blank line
 *
 * When the expected output itself contains blank lines, the separator is
 * doubled and the output ends at a doubled separator:
 *
 *     scan
 *     ----
 *     ----
 *     a
 *
 *     b
 *     ----
 *     ----
 *
 * Arguments are `key`, `key=value` or `key=(v1,v2,…)`. The handler returns the
 * actual output; the runner compares it with the expected text. Run with
 * REWRITE=1 to rewrite the files with the actual outputs (read the diff before
 * committing it).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { expect } from 'vitest';

export interface CmdArg {
  readonly key: string;
  readonly vals: readonly string[];
}

export class TestCase {
  constructor(
    readonly pos: string,
    /** The directive line as written. */
    readonly line: string,
    readonly cmd: string,
    readonly cmdArgs: readonly CmdArg[],
    readonly input: string,
    readonly expected: string,
  ) {}

  hasArg(key: string): boolean {
    return this.cmdArgs.some((a) => a.key === key);
  }

  /** The single value of `key`, or `dflt` when absent (throws when absent with no default). */
  arg(key: string, dflt?: string): string {
    const a = this.cmdArgs.find((x) => x.key === key);
    if (a === undefined) {
      if (dflt === undefined) throw new Error(`${this.pos}: ${this.cmd}: missing argument ${key}`);
      return dflt;
    }
    return a.vals[0] ?? '';
  }

  intArg(key: string, dflt?: number): number {
    const v = this.arg(key, dflt === undefined ? undefined : String(dflt));
    const n = Number(v);
    if (!Number.isFinite(n)) throw new Error(`${this.pos}: ${this.cmd}: ${key}=${v} is not a number`);
    return n;
  }

  /** All values of `key` (for `key=(a,b,c)`), or [] when absent. */
  args(key: string): readonly string[] {
    return this.cmdArgs.find((x) => x.key === key)?.vals ?? [];
  }

  fail(message: string): never {
    throw new Error(`${this.pos}: ${this.cmd}: ${message}`);
  }
}

type Chunk = { kind: 'verbatim'; text: string } | { kind: 'case'; tc: TestCase; doubled: boolean };

function parseArgs(words: string[]): CmdArg[] {
  return words.map((w) => {
    const eq = w.indexOf('=');
    if (eq < 0) return { key: w, vals: [] };
    const key = w.slice(0, eq);
    let val = w.slice(eq + 1);
    if (val.startsWith('(') && val.endsWith(')')) {
      val = val.slice(1, -1);
      return { key, vals: val === '' ? [] : val.split(',').map((s) => s.trim()) };
    }
    return { key, vals: [val] };
  });
}

/** Splits a command line into words, keeping `k=(a, b)` and quoted strings together. */
function splitWords(line: string): string[] {
  const words: string[] = [];
  let cur = '';
  let depth = 0;
  let quote = '';
  for (const ch of line) {
    if (quote !== '') {
      cur += ch;
      if (ch === quote) quote = '';
    } else if (ch === '"' || ch === "'") {
      cur += ch;
      quote = ch;
    } else if (ch === '(') {
      depth++;
      cur += ch;
    } else if (ch === ')') {
      depth--;
      cur += ch;
    } else if (/\s/.test(ch) && depth === 0) {
      if (cur !== '') words.push(cur);
      cur = '';
    } else {
      cur += ch;
    }
  }
  if (cur !== '') words.push(cur);
  return words;
}

function parseFile(path: string, text: string): Chunk[] {
  const lines = text.split('\n');
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  const chunks: Chunk[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] as string;
    if (line.trim() === '' || line.trimStart().startsWith('#')) {
      chunks.push({ kind: 'verbatim', text: line });
      i++;
      continue;
    }
    const pos = `${path}:${i + 1}`;
    const [cmd, ...rest] = splitWords(line);
    i++;
    const input: string[] = [];
    while (i < lines.length && lines[i] !== '----') input.push(lines[i++] as string);
    if (i >= lines.length) throw new Error(`${pos}: directive without a ---- separator`);
    i++; // ----
    let doubled = false;
    const out: string[] = [];
    if (lines[i] === '----') {
      doubled = true;
      i++;
      while (i < lines.length && !(lines[i] === '----' && lines[i + 1] === '----')) out.push(lines[i++] as string);
      i += 2;
    } else {
      while (i < lines.length && (lines[i] as string).trim() !== '') out.push(lines[i++] as string);
    }
    chunks.push({ kind: 'case', tc: new TestCase(pos, line, cmd as string, parseArgs(rest), input.join('\n'), out.join('\n')), doubled });
  }
  return chunks;
}

function normalize(output: string): string {
  return output.replace(/\s+$/, '');
}

/**
 * Runs every directive of `path` through `handler` in order. On a mismatch
 * the test fails with the position of the directive, unless REWRITE=1 is set,
 * in which case the file is rewritten with the actual output.
 */
export async function runDataDriven(path: string, handler: (tc: TestCase) => string | Promise<string>): Promise<void> {
  const rewrite = process.env['REWRITE'] === '1';
  const chunks = parseFile(path, readFileSync(path, 'utf8'));
  const outLines: string[] = [];
  for (const chunk of chunks) {
    if (chunk.kind === 'verbatim') {
      outLines.push(chunk.text);
      continue;
    }
    const { tc } = chunk;
    let actual: string;
    try {
      actual = normalize(await handler(tc));
    } catch (e) {
      throw new Error(`${tc.pos}: ${tc.cmd} threw: ${(e as Error).stack ?? String(e)}`);
    }
    const header = [tc.line];
    if (tc.input !== '') header.push(tc.input);
    const needDouble = actual !== '' && actual.split('\n').some((l) => l.trim() === '');
    if (needDouble) outLines.push(...header, '----', '----', actual, '----', '----');
    else outLines.push(...header, '----', ...(actual === '' ? [] : [actual]));
    if (!rewrite) expect(actual, `${tc.pos}: ${tc.cmd}`).toBe(normalize(tc.expected));
  }
  if (rewrite) writeFileSync(path, `${outLines.join('\n')}\n`);
}

/**
 * The SQL logic-test runner shared by logic.test.ts (MemoryKV) and
 * logic-real-kv.test.ts (the real transactional KV): file format in
 * logic.test.ts's header.
 */
import { expect } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import pg from 'pg';
interface Directive {
  readonly line: number;
  readonly kind: 'statement' | 'query';
  readonly header: string;
  readonly sql: string;
  readonly expected: string[] | undefined;
  /** Where the expected block sits in the file's lines (for rewriting). */
  readonly resultStart: number;
  readonly resultEnd: number;
}

function parseFile(lines: readonly string[]): Directive[] {
  const out: Directive[] = [];
  let i = 0;
  while (i < lines.length) {
    const l = (lines[i] as string).trim();
    if (l === '' || l.startsWith('#')) {
      i++;
      continue;
    }
    const start = i;
    const kind = l.startsWith('statement') ? 'statement' : l.startsWith('query') ? 'query' : undefined;
    if (kind === undefined) throw new Error(`line ${i + 1}: unknown directive ${l}`);
    i++;
    const sql: string[] = [];
    while (i < lines.length && (lines[i] as string).trim() !== '' && (lines[i] as string) !== '----') sql.push(lines[i++] as string);
    let expected: string[] | undefined;
    let resultStart = i;
    let resultEnd = i;
    if (i < lines.length && lines[i] === '----') {
      i++;
      resultStart = i;
      expected = [];
      while (i < lines.length && (lines[i] as string).trim() !== '') expected.push(lines[i++] as string);
      resultEnd = i;
    }
    out.push({ line: start + 1, kind, header: l, sql: sql.join('\n'), expected, resultStart, resultEnd });
  }
  return out;
}

/** One value as a result line shows it; a single-column result keeps its spaces. */
function show(v: unknown, single: boolean): string {
  if (v === null) return 'NULL';
  const s = String(v);
  if (s === '') return '·';
  const t = s.replace(/\n/g, '\\n').replace(/\t/g, '\\t');
  return single ? t : t.replace(/ /g, '_');
}

const raw = { getTypeParser: () => (v: string) => v } as unknown as pg.CustomTypesConfig;

function checkError(d: Directive, e: unknown): void {
  const err = e as { code?: string; message?: string };
  const rest = d.header.replace(/^(statement|query) error\s*/, '');
  const m = /^pgcode\s+(\S+)\s*(.*)$/.exec(rest);
  if (m !== null) {
    expect(err.code, `line ${d.line}: ${d.sql}\n${err.message}`).toBe(m[1]);
    if (m[2] !== undefined && m[2] !== '') expect(err.message, `line ${d.line}`).toMatch(new RegExp(m[2] as string));
  } else if (rest !== '') {
    expect(err.message, `line ${d.line}: ${d.sql}`).toMatch(new RegExp(rest));
  }
}

/**
 * Runs one .slt file through a pg client connected to `url`; with `rewrite`,
 * writes the actual results back into the file instead of comparing.
 */
export async function runSltFile(path: string, file: string, url: string, rewrite = false): Promise<void> {
  const lines = readFileSync(path, 'utf8').split('\n');
  const directives = parseFile(lines);
  const c = new pg.Client({ connectionString: url, types: raw });
  await c.connect();
  const rewrites: { d: Directive; actual: string[] }[] = [];
  try {
    for (const d of directives) {
      const isError = /^(statement|query) error/.test(d.header);
      let res: pg.QueryArrayResult | undefined;
      let failure: unknown;
      try {
        res = await c.query({ text: d.sql, rowMode: 'array' });
      } catch (e) {
        failure = e;
      }
      if (isError) {
        expect(failure, `line ${d.line}: expected an error from\n${d.sql}`).toBeDefined();
        checkError(d, failure);
        continue;
      }
      if (failure !== undefined) {
        const f = failure as { code?: string; message?: string };
        throw new Error(`${file}:${d.line}: ${d.sql}\n→ ${f.code} ${f.message}`);
      }
      if (d.kind === 'statement') continue;
      const r = res as pg.QueryArrayResult;
      const opts = d.header.split(/\s+/).slice(2);
      const lineOf = (row: unknown[]): string => row.map((v) => show(v, r.fields.length === 1)).join(' ');
      let actual = r.rows.map((row) => lineOf(row as unknown[]));
      let expected = d.expected ?? [];
      if (opts.includes('rowsort')) {
        actual = [...actual].sort();
        expected = [...expected].sort();
      } else if (opts.includes('valuesort')) {
        actual = actual.flatMap((l) => l.split(' ')).sort();
        expected = expected.flatMap((l) => l.split(' ')).sort();
      }
      if (opts.includes('colnames')) actual = [r.fields.map((f) => f.name).join(' '), ...actual];
      if (opts.includes('colnames') && (opts.includes('rowsort') || opts.includes('valuesort'))) {
        expected = [...(d.expected ?? []).slice(0, 1), ...expected.filter((x) => x !== (d.expected ?? [])[0])];
      }
      const types = d.header.split(/\s+/)[1] ?? '';
      if (r.fields.length > 0) expect(r.fields.length, `${file}:${d.line}: column count vs types "${types}"`).toBe(types.length);
      if (rewrite) {
        const raw = r.rows.map((row) => lineOf(row as unknown[]));
        rewrites.push({ d, actual: opts.includes('colnames') ? [r.fields.map((f) => f.name).join(' '), ...raw] : raw });
        continue;
      }
      expect(actual, `${file}:${d.line}: ${d.sql}`).toEqual(expected);
    }
  } finally {
    await c.end();
  }
  if (rewrite && rewrites.length > 0) {
    const out = [...lines];
    for (const { d, actual } of rewrites.reverse()) {
      if (d.expected === undefined) out.splice(d.resultStart, 0, '----', ...actual);
      else out.splice(d.resultStart, d.resultEnd - d.resultStart, ...actual);
    }
    writeFileSync(path, out.join('\n'));
  }
}

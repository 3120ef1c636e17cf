// The check-history command: exit 0 only when the verdict is exactly true (issue 9:
// "unknown" or a checker timeout is not a pass).
import { describe, it, expect } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCheckHistory } from '../../jepsen-style/checkers/check-history.js';
import { formatHistoryJsonl } from '../../jepsen-style/history/history.js';
import { txnHistory } from './history-builder.js';
import { linearizabilityData } from './support.js';

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCheckHistory(argv, (s) => (out += s), (s) => (err += s));
  return { code, out, err };
}

describe('check-history', () => {
  const etcd = (n: string) => join(linearizabilityData, 'porcupine-etcd', `etcd_${n}.log`);

  it('exits 0 for a linearizable history and 1 for a non-linearizable one', async () => {
    expect((await run('--workload', 'cas-register', '--format', 'jepsen-log', etcd('002'))).code).toBe(0);
    const bad = await run('--workload', 'cas-register', '--format', 'jepsen-log', etcd('000'));
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.out).valid).toBe(false);
  });

  it('exits 1 when the search budget runs out (unknown is not a pass)', async () => {
    const r = await run('--workload', 'cas-register', '--format', 'jepsen-log', '--time-limit', '-1', etcd('000'));
    expect(JSON.parse(r.out).valid).toBe('unknown');
    expect(r.code).toBe(1);
  });

  it('checks a jsonl append history under either consistency model', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-check-'));
    try {
      const file = join(dir, 'history.jsonl');
      // A stale read after a completed append: serializable, not strict serializable.
      writeFileSync(file, formatHistoryJsonl(txnHistory([[0, 'ok', [['append', 'x', 1]]], [1, 'ok', [['r', 'x', []]]], [2, 'ok', [['r', 'x', [1]]]]], false)));
      expect((await run('--workload', 'append', file)).code).toBe(0);
      expect((await run('--workload', 'append', '--model', 'strict-serializable', file)).code).toBe(1);
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  it('prints help and exits 0 with --help', async () => {
    const r = await run('--help');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/--workload <name>/);
  });

  it('exits 2 on unusable arguments', async () => {
    expect((await run('--workload', 'nope', 'x')).code).toBe(2);
    expect((await run('--workload', 'bank', 'x')).code).toBe(2);
    expect((await run('x')).code).toBe(2);
    expect((await run('--workload', 'g2', '/nonexistent/history.jsonl')).code).toBe(2);
    expect((await run('--workload', 'g2', '--format', 'xml', etcd('000'))).code).toBe(2);
  });
});

/**
 * test/compat/run-script.ts — runs a compatibility script (Node, Python, Java)
 * as a child process, asynchronously: the Cairn server under test lives in the
 * test process, so a synchronous spawn would deadlock it.
 */
import { spawn } from 'node:child_process';

/** Runs `cmd args…`, killing it after timeoutMs; resolves with its exit code and combined output. */
export function runScript(cmd: string, args: readonly string[], timeoutMs = 60_000): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    p.stdout.on('data', (b: Buffer) => (output += b.toString()));
    p.stderr.on('data', (b: Buffer) => (output += b.toString()));
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('error', reject);
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}


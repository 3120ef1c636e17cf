/**
 * `node dist/bench/support/profiled-node.js start …`: a Cairn node (the CLI
 * of dist/src/cli/main.js, same arguments) under the V8 CPU profiler, for
 * CAIRN_BENCH_CPU_PROF=<dir> (node --cpu-prof cannot be set through
 * NODE_OPTIONS). The profile is written to
 * <dir>/node-<pid>.cpuprofile when the process receives SIGTERM (before the
 * node's own shutdown handler runs) or exits. SIGUSR2 discards what was
 * profiled so far and starts again (a bench sends it before its measured
 * runs, so the load phase stays out of the profile).
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';

const dir = process.env['CAIRN_BENCH_CPU_PROF'] ?? '.';
const session = new Session();
session.connect();
let written = false;
function writeProfile(): void {
  if (written) return;
  written = true;
  session.post('Profiler.stop', (err, res) => {
    if (err === null) writeFileSync(join(dir, `node-${process.pid}.cpuprofile`), JSON.stringify(res.profile));
  });
}
session.post('Profiler.enable', () => session.post('Profiler.setSamplingInterval', { interval: Number(process.env['CAIRN_BENCH_CPU_PROF_INTERVAL_US'] ?? 1000) }, () => session.post('Profiler.start')));
process.prependListener('SIGTERM', writeProfile);
process.on('SIGUSR2', () => session.post('Profiler.stop', () => session.post('Profiler.start')));
process.once('exit', writeProfile);
await import(new URL('../../src/cli/main.js', import.meta.url).href);

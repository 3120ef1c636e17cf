/**
 * The workload registry: name → Workload, used by the runner and the client processes.
 */
import { CairnError } from '../../src/util/index.js';
import { appendWorkload } from './append.js';
import { bankWorkload } from './bank.js';
import { g2Workload } from './g2.js';
import { kvRegisterN1ReadsWorkload, kvRegisterWorkload } from './kv-register.js';
import { monotonicWorkload } from './monotonic.js';
import { registerWorkload } from './register.js';
import { registerHandoffWorkload } from './register-handoff.js';
import { sequentialWorkload } from './sequential.js';
import { setsWorkload } from './sets.js';
import type { Workload } from './workload.js';

export * from './workload.js';

export const WORKLOADS: Readonly<Record<string, Workload>> = {
  append: appendWorkload,
  register: registerWorkload,
  'register-handoff': registerHandoffWorkload,
  bank: bankWorkload,
  sets: setsWorkload,
  monotonic: monotonicWorkload,
  sequential: sequentialWorkload,
  g2: g2Workload,
  'kv-register': kvRegisterWorkload,
  'kv-register-n1-reads': kvRegisterN1ReadsWorkload,
};

export function workloadNamed(name: string): Workload {
  const w = WORKLOADS[name];
  if (w === undefined) throw new CairnError('jepsen.unknown_workload', `jepsen: unknown workload ${name} (have ${Object.keys(WORKLOADS).join(', ')})`);
  return w;
}

/** Shared helpers for the jepsen-style checker tests: locating ../shared testdata. */
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const linearizabilityData = join(repoRoot, '..', 'shared', 'testdata', 'linearizability');

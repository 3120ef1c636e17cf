// Runs every raft/testdata/*.txt transcript through the interaction
// environment (raft/rafttest/interaction-env.ts). REWRITE=1 rewrites them;
// read the diff before committing.
import { describe, it } from 'vitest';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { runDataDriven } from '../support/datadriven.js';
import { InteractionEnv } from '../../raft/rafttest/interaction-env.js';

const dir = join(import.meta.dirname, '../../raft/testdata');

describe('raft interaction transcripts', () => {
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.txt')).sort()) {
    it(file, async () => {
      const env = new InteractionEnv();
      await runDataDriven(join(dir, file), (tc) => env.handle(tc));
    });
  }
});

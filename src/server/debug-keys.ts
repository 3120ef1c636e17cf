/**
 * `cairn debug keys`: every engine key of a stopped node's store, in engine
 * order, printed with storage/keys.ts's prettyEngineKey (and the value in
 * hex when asked). Reads in chunks of 1024 entries, one write per chunk.
 *
 * Ownership: src/server (src/cli may not open stores itself, DESIGN.md §2).
 * Opening a store that a running node holds fails with storage.locked.
 */
import { LevelEngine } from '../../storage/level-engine.js';
import { prettyEngineKey } from '../../storage/keys.js';

export async function printEngineKeys(storeDir: string, values: boolean, write: (s: string) => void): Promise<number> {
  const engine = await LevelEngine.open(storeDir);
  let n = 0;
  try {
    const it = engine.iterator({});
    try {
      for (;;) {
        const rows = await it.nextBatch(1024);
        if (rows.length === 0) break;
        let out = '';
        for (const { key, value } of rows) {
          out += prettyEngineKey(Buffer.from(key));
          out += values ? ` ${Buffer.from(value).toString('hex')}\n` : '\n';
        }
        n += rows.length;
        write(out);
      }
    } finally {
      await it.close();
    }
  } finally {
    await engine.close();
  }
  return n;
}

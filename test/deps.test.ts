// DESIGN.md §2: "A test fails the build when an import crosses these lines."
import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { checkFile, checkTree, importSpecifiers, layerOf } from './support/import-rules.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

describe('import rules (DESIGN.md §2)', () => {
  it('the tree has no import that crosses a layer line', () => {
    expect(checkTree(root)).toEqual([]);
  });

  it('rejects raft importing the storage layer', () => {
    const v = checkFile('raft/raft.ts', "import { Engine } from '../storage/engine.js';\n");
    expect(v).toEqual([{ file: 'raft/raft.ts', specifier: '../storage/engine.js', target: 'storage/engine.ts' }]);
  });

  it('rejects sql importing src/kv or raft, and storage beyond encoding and keys', () => {
    expect(checkFile('sql/exec/scan.ts', "import type { Replica } from '../../src/kv/replica.js';")).toHaveLength(1);
    expect(checkFile('sql/plan.ts', "const m = await import('../raft/raw-node.js');")).toHaveLength(1);
    expect(checkFile('sql/plan.ts', "import { Mvcc } from '../storage/mvcc.js';")).toHaveLength(1);
    expect(checkFile('sql/plan.ts', "import { encodeTuple } from '../storage/encoding/tuple.js';")).toEqual([]);
    expect(checkFile('sql/plan.ts', "import { tableKey } from '../storage/keys.js';")).toEqual([]);
  });

  it('rejects src/util importing anything of ours, and allows packages everywhere', () => {
    expect(checkFile('src/util/hlc.ts', "import '../rpc/codec.js';")).toHaveLength(1);
    expect(checkFile('src/util/log.ts', "import { pino } from 'pino';\nimport { x } from 'node:fs';")).toEqual([]);
  });

  it('lets src/server and tests import anything', () => {
    expect(checkFile('src/server/node.ts', "import { RawNode } from '../../raft/raw-node.js';")).toEqual([]);
    expect(checkFile('test/x.test.ts', "import { RawNode } from '../raft/raw-node.js';")).toEqual([]);
  });

  it('finds static, re-export, side-effect and dynamic imports', () => {
    const src = [
      "import a from './a.js';",
      "import type { B } from './b.js';",
      "export * from './c.js';",
      "export { d } from './d.js';",
      "import './e.js';",
      "const f = await import('./f.js');",
      "import {\n  g,\n  h,\n} from './gh.js';",
    ].join('\n');
    expect(importSpecifiers(src)).toEqual(['./a.js', './b.js', './c.js', './d.js', './e.js', './gh.js', './f.js'].sort((x, y) => src.indexOf(x) - src.indexOf(y)));
  });

  it('assigns the most specific layer', () => {
    expect(layerOf('src/util/hlc.ts')?.dir).toBe('src/util');
    expect(layerOf('src/kv/client/txn-coord-sender.ts')?.dir).toBe('src/kv');
  });
});

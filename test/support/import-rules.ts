/**
 * The layer rules of DESIGN.md §2, as data, and a checker that finds the
 * imports crossing them. test/deps.test.ts runs it over the tree.
 *
 * A layer is named by its folder. A file may import its own layer, the layers
 * listed for it, and packages from node_modules (public libraries). `sql/`
 * may reach into `storage/` only for the encoding and the keyspace.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

export interface Layer {
  /** Folder, relative to the repository root, with "/" separators. */
  readonly dir: string;
  /** Layers (or more specific paths inside them) this layer may import. */
  readonly mayImport: readonly string[] | 'anything';
}

export const LAYERS: readonly Layer[] = [
  { dir: 'src/util', mayImport: [] },
  { dir: 'storage', mayImport: ['src/util'] },
  { dir: 'raft', mayImport: ['src/util'] },
  { dir: 'sql', mayImport: ['storage/encoding', 'storage/keys.ts', 'src/util'] },
  { dir: 'src/rpc', mayImport: ['src/util'] },
  { dir: 'src/kv', mayImport: ['raft', 'storage', 'src/rpc', 'src/util'] },
  { dir: 'src/server', mayImport: 'anything' },
  // The CLI starts servers, runs SQL shells and the workload tool.
  { dir: 'src/cli', mayImport: ['src/server', 'sql', 'src/workload', 'src/util'] },
  { dir: 'src/workload', mayImport: ['src/util'] },
  { dir: 'jepsen-style', mayImport: ['src/util'] },
  { dir: 'test', mayImport: 'anything' },
  { dir: 'bench', mayImport: 'anything' },
];

export interface Violation {
  readonly file: string;
  readonly specifier: string;
  readonly target: string;
}

const IMPORT_RE = /(?:^|[\s;])(?:import|export)\s[^'"`;]*?from\s*['"]([^'"]+)['"]|(?:^|[\s;])import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm;

/** The module specifiers a source text imports (static, side-effect and dynamic). */
export function importSpecifiers(source: string): string[] {
  const out: string[] = [];
  for (const m of source.matchAll(IMPORT_RE)) {
    const spec = m[1] ?? m[2] ?? m[3];
    if (spec !== undefined) out.push(spec);
  }
  return out;
}

function toPosix(p: string): string {
  return p.split(sep).join('/');
}

function within(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith('.ts') ? dir : `${dir}/`);
}

export function layerOf(relPath: string): Layer | undefined {
  // Longest matching folder wins (src/util before src).
  let best: Layer | undefined;
  for (const layer of LAYERS) {
    if (within(relPath, layer.dir) && (best === undefined || layer.dir.length > best.dir.length)) best = layer;
  }
  return best;
}

/**
 * Checks one file's imports. `relPath` is the importing file relative to the
 * root; relative specifiers are resolved against it (a ".js" suffix names the
 * ".ts" source, as ESM TypeScript writes it).
 */
export function checkFile(relPath: string, source: string): Violation[] {
  const from = layerOf(relPath);
  if (from === undefined || from.mayImport === 'anything') return [];
  const violations: Violation[] = [];
  for (const spec of importSpecifiers(source)) {
    if (!spec.startsWith('.')) continue; // a package or node: builtin
    const target = toPosix(join(dirname(relPath), spec)).replace(/\.js$/, '.ts');
    if (within(target, from.dir)) continue;
    const allowed = from.mayImport.some((dir) => within(target, dir));
    if (!allowed) violations.push({ file: relPath, specifier: spec, target });
  }
  return violations;
}

function listSources(root: string, dir: string, out: string[]): void {
  let entries: string[];
  try {
    entries = readdirSync(join(root, dir));
  } catch {
    return;
  }
  for (const name of entries) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const rel = dir === '' ? name : `${dir}/${name}`;
    const st = statSync(join(root, rel));
    if (st.isDirectory()) listSources(root, rel, out);
    else if (name.endsWith('.ts')) out.push(rel);
  }
}

/** Every violation in the tree under `root`. */
export function checkTree(root: string): Violation[] {
  const files: string[] = [];
  for (const layer of LAYERS) {
    if (!layer.dir.includes('/')) listSources(root, layer.dir, files);
  }
  listSources(root, 'src', files);
  const seen = new Set<string>();
  const violations: Violation[] = [];
  for (const rel of files) {
    if (seen.has(rel)) continue;
    seen.add(rel);
    violations.push(...checkFile(toPosix(relative(root, resolve(root, rel))), readFileSync(join(root, rel), 'utf8')));
  }
  return violations;
}

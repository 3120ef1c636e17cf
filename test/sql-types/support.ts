// Test helpers: SQL type text as the golden tables write it ('varchar(3)[]') → SqlType; errorOf.
import { typeFromName, type SqlType } from '../../sql/types/type.js';

export function parseTypeText(s: string): SqlType {
  const m = /^("?[a-z0-9 ]+"?)(?:\(([\d,]+)\))?((?:\[\])*)$/.exec(s);
  if (m === null) throw new Error(`bad type text ${s}`);
  const name = m[1] === 'char' && m[2] === undefined ? '"char"' : (m[1] as string);
  const mods = m[2] === undefined ? [] : m[2].split(',').map(Number);
  return typeFromName(name, mods, (m[3] as string).length / 2);
}

/** What `f` throws (undefined when it returns). */
export function errorOf(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    return e;
  }
  return undefined;
}

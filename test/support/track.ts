/**
 * A promise whose outcome a test can look at without awaiting it (has it
 * settled yet? with what error?), for checks like "not answered while the
 * sync is held".
 */
export interface Tracked<T> {
  readonly promise: Promise<T>;
  readonly settled: boolean;
  readonly error: unknown;
}

export function track<T>(p: Promise<T>): Tracked<T> {
  const t = { promise: p, settled: false, error: undefined as unknown };
  p.then(
    () => void (t.settled = true),
    (e: unknown) => {
      t.settled = true;
      t.error = e;
    },
  );
  return t;
}

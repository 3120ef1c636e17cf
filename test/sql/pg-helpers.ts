/** Helpers shared by the SQL client tests. */

/** The error a promise rejects with (fails the test if it resolves). */
export async function errorOf(p: Promise<unknown>): Promise<{ code: string; message: string; position?: string; detail?: string }> {
  try {
    await p;
  } catch (e) {
    return e as { code: string; message: string };
  }
  throw new Error('expected an error');
}

/**
 * Process exit for CLI commands that print results.
 *
 * `process.exit` drops whatever stdout/stderr still hold in user space. On Linux, stdio
 * that is a pipe, file or terminal is written synchronously, but a socket is not — and a
 * parent that spawns `cairn` with `stdio: 'pipe'` (Node's child_process, many test
 * runners and supervisors) hands it a Unix socket. A large `cairn sql --format csv`
 * export then lost its tail. So exit only once both streams have flushed what was
 * queued before this call.
 */

function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    // A zero-length write's callback runs after every earlier write has been handed to the OS.
    if (stream.destroyed || !stream.writable) resolve();
    else stream.write('', () => resolve());
  });
}

/** Exits with `code` once stdout and stderr have flushed. */
export async function exitAfterFlush(code: number): Promise<never> {
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit(code);
}

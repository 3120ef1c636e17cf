/**
 * Logger factory over pino. JSON lines by default (machine-readable, cheap);
 * pretty output only when asked (`pretty: true` or CAIRN_LOG_PRETTY=1), which
 * needs the dev dependency pino-pretty. The level comes from the option,
 * then CAIRN_LOG_LEVEL, then "info". Hot paths log at debug or below only
 * (DESIGN.md §4).
 */
import { pino, type Logger, type DestinationStream } from 'pino';

export type { Logger };

export interface LoggerOptions {
  readonly name: string;
  readonly level?: string;
  readonly pretty?: boolean;
  /** Where lines go; standard error by default. */
  readonly destination?: DestinationStream;
}

export function createLogger(opts: LoggerOptions): Logger {
  const level = opts.level ?? process.env['CAIRN_LOG_LEVEL'] ?? 'info';
  const pretty = opts.pretty ?? process.env['CAIRN_LOG_PRETTY'] === '1';
  if (pretty) {
    return pino({
      name: opts.name,
      level,
      transport: { target: 'pino-pretty', options: { colorize: false, destination: 2 } },
    });
  }
  return pino({ name: opts.name, level }, opts.destination ?? pino.destination(2));
}

/** A logger that drops everything, for tests and benchmarks. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

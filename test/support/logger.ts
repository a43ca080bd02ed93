import pino from 'pino';

/** A logger that writes nothing: for code under test whose logs the test does not read. */
export const silent = pino({ level: 'silent' });

/** One line a logger wrote, parsed: pino's level number, the message, and its bound fields. */
export type LogRecord = { level: number; msg: string } & Record<string, any>;

/** A logger at `level` whose lines the test reads, parsed, in `lines` as they are written. */
export function recordingLogger(level: pino.LevelWithSilent = 'warn'): { logger: pino.Logger; lines: LogRecord[] } {
  const lines: LogRecord[] = [];
  const logger = pino({ level }, { write: (line: string) => void lines.push(JSON.parse(line) as LogRecord) });
  return { logger, lines };
}

// Structured logging: one JSON object per line, to work/server.log (and stderr when attached to a
// terminal or SVC_LOG_STDERR=1). Never pass secrets (tokens, passwords, keys, sec_env values) as
// fields; `redact` below is a last line of defence for obviously secret field names.
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const LEVELS: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
  close(): Promise<void>;
}

const SECRET_FIELD = /token|password|secret|authorization|process_key|sec_env|cookie/i;

function redact(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (SECRET_FIELD.test(key)) out[key] = '[redacted]';
    else if (value instanceof Error) out[key] = { name: value.name, message: value.message };
    else out[key] = value;
  }
  return out;
}

/** The logger createLogger returns: its level can change while it runs (POST /svc/config). */
export interface RootLogger extends Logger {
  /** Applies at once to this logger and every child of it. */
  setLevel(level: LogLevel): void;
}

export interface LoggerOptions {
  file?: string;
  level?: LogLevel;
  stderr?: boolean;
}

export function createLogger(options: LoggerOptions = {}): RootLogger {
  let stream: WriteStream | undefined;
  if (options.file !== undefined) {
    mkdirSync(dirname(options.file), { recursive: true });
    stream = createWriteStream(options.file, { flags: 'a', mode: 0o600 });
  }
  let threshold = LEVELS[options.level ?? 'info'];
  const toStderr = options.stderr ?? false;

  const make = (base: Record<string, unknown>): Logger => {
    const write = (level: LogLevel, message: string, fields?: Record<string, unknown>): void => {
      if (LEVELS[level] < threshold) return;
      const line =
        JSON.stringify({
          time: new Date().toISOString(),
          level,
          msg: message,
          ...redact({ ...base, ...fields }),
        }) + '\n';
      stream?.write(line);
      if (toStderr) process.stderr.write(line);
    };
    return {
      debug: (m, f) => write('debug', m, f),
      info: (m, f) => write('info', m, f),
      warn: (m, f) => write('warn', m, f),
      error: (m, f) => write('error', m, f),
      child: (fields) => make({ ...base, ...fields }),
      close: () =>
        new Promise<void>((resolve) => {
          if (stream === undefined) resolve();
          else stream.end(() => resolve());
        }),
    };
  };
  return {
    ...make({}),
    setLevel: (level) => {
      threshold = LEVELS[level];
    },
  };
}

/** A logger that drops everything (unit tests). */
export const silentLogger: Logger = createLogger({ stderr: false });

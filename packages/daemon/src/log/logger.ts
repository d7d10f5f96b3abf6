// Structured logging: one JSON object per line, to work/server.log (and stderr when attached to a
// terminal or SVC_LOG_STDERR=1). Never pass secrets (tokens, passwords, keys, sec_env values) as
// fields; `redact` below is a last line of defence for obviously secret field names.
// Bounded: lines naming a peer (`remote`) are rate-limited per peer (peer-log-limit.ts), and the
// file rotates by size (server.log → server.log.1 … server.log.<backups>, the oldest dropped).
import {
  createWriteStream,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
  type WriteStream,
} from 'node:fs';
import { dirname } from 'node:path';
import { PeerLogLimit } from './peer-log-limit.ts';

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
  /** Rotate the file when it would grow past this many bytes. Default 16 MiB. */
  maxFileBytes?: number;
  /** Rotated files kept (server.log.1 newest). Default 4. */
  backups?: number;
  /** Lines per peer per window (peer = the `remote` field). Default 20 per 10 s. */
  peerLines?: { perWindow: number; windowMs: number };
}

export const DEFAULT_LOG_MAX_FILE_BYTES = 16 * 1024 * 1024;
export const DEFAULT_LOG_BACKUPS = 4;
const DEFAULT_PEER_LINES = { perWindow: 20, windowMs: 10_000 };
/** Distinct peers with an open window at once; more share one bucket. */
const MAX_LOGGED_PEERS = 4096;

/** An append-only file that rotates by size: `path` → `path.1` → … → `path.<backups>` (dropped). */
class RotatingFile {
  readonly path: string;
  readonly maxBytes: number;
  readonly backups: number;
  #stream: WriteStream;
  #size: number;

  constructor(path: string, maxBytes: number, backups: number) {
    this.path = path;
    this.maxBytes = maxBytes;
    this.backups = backups;
    mkdirSync(dirname(path), { recursive: true });
    this.#size = sizeOf(path);
    this.#stream = this.#open();
  }

  write(line: string): void {
    const bytes = Buffer.byteLength(line);
    if (this.#size > 0 && this.#size + bytes > this.maxBytes) this.#rotate();
    this.#size += bytes;
    this.#stream.write(line);
  }

  end(): Promise<void> {
    return new Promise((resolve) => this.#stream.end(() => resolve()));
  }

  #open(): WriteStream {
    // Opened synchronously, so that a rotation right after (a burst of lines) renames a file that exists.
    const stream = createWriteStream('', { fd: openSync(this.path, 'a', 0o600) });
    stream.on('error', () => undefined); // a full or vanished disk must not crash the daemon
    return stream;
  }

  #rotate(): void {
    // Writes still queued on the old stream land in the renamed file (the descriptor follows it).
    this.#stream.end();
    try {
      rmSync(`${this.path}.${this.backups}`, { force: true });
      for (let i = this.backups - 1; i >= 1; i--)
        renameIfExists(`${this.path}.${i}`, `${this.path}.${i + 1}`);
      if (this.backups > 0) renameSync(this.path, `${this.path}.1`);
      else rmSync(this.path, { force: true });
    } catch {
      // Rotation failed (permissions, disk): keep appending to a fresh stream of the same file.
    }
    this.#size = sizeOf(this.path);
    this.#stream = this.#open();
  }
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

function renameIfExists(from: string, to: string): void {
  try {
    renameSync(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

export function createLogger(options: LoggerOptions = {}): RootLogger {
  const file =
    options.file === undefined
      ? undefined
      : new RotatingFile(
          options.file,
          options.maxFileBytes ?? DEFAULT_LOG_MAX_FILE_BYTES,
          options.backups ?? DEFAULT_LOG_BACKUPS,
        );
  let threshold = LEVELS[options.level ?? 'info'];
  const toStderr = options.stderr ?? false;
  const peerLines = options.peerLines ?? DEFAULT_PEER_LINES;
  const limit = new PeerLogLimit({ ...peerLines, maxPeers: MAX_LOGGED_PEERS, now: () => Date.now() });

  const emit = (level: LogLevel, message: string, fields: Record<string, unknown>): void => {
    const line =
      JSON.stringify({ time: new Date().toISOString(), level, msg: message, ...redact(fields) }) + '\n';
    file?.write(line);
    if (toStderr) process.stderr.write(line);
  };
  const summarize = (peer: string, count: number): void =>
    emit('warn', `suppressed ${count} log lines of this peer`, { remote: peer, suppressed: count });
  // Peers that went quiet still get their summary.
  const sweeper = setInterval(() => {
    for (const { peer, count } of limit.sweep()) summarize(peer, count);
  }, peerLines.windowMs);
  sweeper.unref();

  const make = (base: Record<string, unknown>): Logger => {
    const write = (level: LogLevel, message: string, fields?: Record<string, unknown>): void => {
      if (LEVELS[level] < threshold) return;
      const all = { ...base, ...fields };
      const peer = all['remote'];
      if (typeof peer === 'string') {
        const verdict = limit.admit(peer);
        if (verdict.summary !== undefined) summarize(verdict.summary.peer, verdict.summary.count);
        if (!verdict.write) return;
      }
      emit(level, message, all);
    };
    return {
      debug: (m, f) => write('debug', m, f),
      info: (m, f) => write('info', m, f),
      warn: (m, f) => write('warn', m, f),
      error: (m, f) => write('error', m, f),
      child: (fields) => make({ ...base, ...fields }),
      close: async () => {
        clearInterval(sweeper);
        for (const { peer, count } of limit.sweep()) summarize(peer, count);
        await file?.end();
      },
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

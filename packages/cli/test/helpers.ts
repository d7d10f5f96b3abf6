// Drives the real `svc` binary (bin/svc.js under this Node) as a child process.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const SVC = resolve(import.meta.dirname, '../bin/svc.js');

export interface SvcRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface SvcEnv {
  /** The session directory (SVC_CONFIG_DIR) of this test user. */
  configDir: string;
  env: Record<string, string>;
  run(
    args: string[],
    options?: { stdin?: string; env?: Record<string, string | undefined> },
  ): Promise<SvcRun>;
  spawn(args: string[], options?: { env?: Record<string, string | undefined> }): LiveSvc;
  cleanup(): Promise<void>;
}

export interface LiveSvc {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves when stdout+stderr match `pattern` (bounded), with the match. */
  waitFor(pattern: RegExp, stream?: 'stdout' | 'stderr', timeoutMs?: number): Promise<RegExpExecArray>;
  exited: Promise<number | null>;
}

/** A clean environment: no DISPLAY (headless), own config dir, the given SVC_HOME/bearer. */
export async function svcEnv(base: Record<string, string>): Promise<SvcEnv> {
  const configDir = await mkdtemp(join(tmpdir(), 'svc-cli-config-'));
  const env: Record<string, string> = {
    PATH: process.env['PATH'] ?? '',
    HOME: configDir,
    SVC_CONFIG_DIR: configDir,
    ...base,
  };
  const merged = (extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv => {
    const out: NodeJS.ProcessEnv = { ...env };
    for (const [k, v] of Object.entries(extra)) {
      if (v === undefined) delete out[k];
      else out[k] = v;
    }
    return out;
  };
  const live: LiveSvc[] = [];
  return {
    configDir,
    env,
    run(args, options = {}) {
      return new Promise((done, reject) => {
        const child = spawn(process.execPath, [SVC, ...args], {
          env: merged(options.env),
          stdio: ['pipe', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
        child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
        child.on('error', reject);
        child.on('close', (code) => done({ code, stdout, stderr }));
        child.stdin.on('error', () => undefined);
        child.stdin.end(options.stdin ?? '');
      });
    },
    spawn(args, options = {}) {
      const child = spawn(process.execPath, [SVC, ...args], {
        env: merged(options.env),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const out = { stdout: '', stderr: '' };
      const waiters = new Set<() => void>();
      const wake = (): void => waiters.forEach((w) => w());
      child.stdout.on('data', (c: Buffer) => ((out.stdout += c.toString('utf8')), wake()));
      child.stderr.on('data', (c: Buffer) => ((out.stderr += c.toString('utf8')), wake()));
      const exited = new Promise<number | null>((done) => child.on('close', (code) => (wake(), done(code))));
      const handle: LiveSvc = {
        child,
        stdout: () => out.stdout,
        stderr: () => out.stderr,
        exited,
        waitFor(pattern, stream = 'stdout', timeoutMs = 20_000) {
          return new Promise((done, reject) => {
            const check = (): void => {
              const match = pattern.exec(out[stream]);
              if (match !== null) {
                finish();
                done(match);
              } else if (child.exitCode !== null) {
                finish();
                reject(
                  new Error(`svc exited ${child.exitCode} before ${String(pattern)}; stderr: ${out.stderr}`),
                );
              }
            };
            const timer = setTimeout(() => {
              finish();
              reject(new Error(`timed out waiting for ${String(pattern)} on ${stream}: ${out[stream]}`));
            }, timeoutMs);
            const finish = (): void => {
              clearTimeout(timer);
              waiters.delete(check);
            };
            waiters.add(check);
            check();
          });
        },
      };
      live.push(handle);
      return handle;
    },
    async cleanup() {
      for (const handle of live) if (handle.child.exitCode === null) handle.child.kill('SIGKILL');
      await Promise.all(live.map((h) => h.exited));
      await rm(configDir, { recursive: true, force: true });
    },
  };
}

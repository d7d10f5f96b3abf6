// work/ports.json: every bound listener by name (CONTRACT §3), so tests never race for ports.
import { watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../atomic-file.ts';

export type ListenerName =
  'rest' | 'tcp' | 'agent' | 'metrics' | 'issuer' | 'telemetry' | 'admin_ui' | 'grpc';

const LISTENER_NAMES: readonly ListenerName[] = [
  'rest',
  'tcp',
  'agent',
  'metrics',
  'issuer',
  'telemetry',
  'admin_ui',
  'grpc',
];

export class PortsFile {
  readonly #dir: string;
  readonly #file: string;
  #ports: Partial<Record<ListenerName, number>> = {};
  #writing: Promise<void> = Promise.resolve();

  constructor(workDir: string) {
    this.#dir = workDir;
    this.#file = join(workDir, 'ports.json');
  }

  /**
   * Merges `work/ports.<program>.json`, which a system application (svc-identity) writes with its
   * own bound ports, into ports.json now and whenever it changes; its keys leave when it is removed.
   * One writer per file, so neither side clobbers the other. Returns a function that stops watching.
   */
  mergeFrom(program: string, onChange?: (ports: Partial<Record<ListenerName, number>>) => void): () => void {
    const name = `ports.${program}.json`;
    let merged: ListenerName[] = [];
    let applying: Promise<void> = Promise.resolve();
    const apply = (): void => {
      applying = applying.then(async () => {
        let ports: Partial<Record<ListenerName, number>> = {};
        try {
          const parsed = JSON.parse(await readFile(join(this.#dir, name), 'utf8')) as Record<string, unknown>;
          for (const key of LISTENER_NAMES) {
            const value = parsed[key];
            if (typeof value === 'number' && Number.isInteger(value) && value > 0 && value < 65536)
              ports[key] = value;
          }
        } catch {
          ports = {}; // absent (program stopped) or mid-write: the next change event re-reads it
        }
        const keys = Object.keys(ports) as ListenerName[];
        if (keys.length === merged.length && keys.every((key) => this.#ports[key] === ports[key])) return;
        for (const key of merged) if (!(key in ports)) await this.set(key, undefined);
        for (const key of keys) await this.set(key, ports[key]);
        merged = keys;
        onChange?.(ports);
      });
    };
    const watcher = watch(this.#dir, (_event, filename) => {
      if (filename === name) apply();
    });
    watcher.on('error', () => undefined);
    apply();
    return () => watcher.close();
  }

  get ports(): Readonly<Partial<Record<ListenerName, number>>> {
    return this.#ports;
  }

  /** Record (or with `undefined`, remove) a listener and rewrite the file atomically. */
  set(name: ListenerName, port: number | undefined): Promise<void> {
    if (port === undefined) delete this.#ports[name];
    else this.#ports[name] = port;
    const snapshot = JSON.stringify(this.#ports, null, 2) + '\n';
    this.#writing = this.#writing.then(async () => {
      await writeFileAtomic(this.#file, snapshot, { mode: 0o644 });
    });
    return this.#writing;
  }

  static async read(workDir: string): Promise<Partial<Record<ListenerName, number>>> {
    return JSON.parse(await readFile(join(workDir, 'ports.json'), 'utf8')) as Partial<
      Record<ListenerName, number>
    >;
  }
}

// work/ports.json: every bound listener by name (CONTRACT §3), so tests never race for ports.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../util/atomic-file.ts';

export type ListenerName =
  'rest' | 'tcp' | 'agent' | 'metrics' | 'issuer' | 'telemetry' | 'admin_ui' | 'grpc';

export class PortsFile {
  readonly #file: string;
  #ports: Partial<Record<ListenerName, number>> = {};
  #writing: Promise<void> = Promise.resolve();

  constructor(workDir: string) {
    this.#file = join(workDir, 'ports.json');
  }

  get ports(): Readonly<Partial<Record<ListenerName, number>>> {
    return this.#ports;
  }

  /** Record (or with `undefined`, remove) a listener and rewrite the file atomically. */
  set(name: ListenerName, port: number | undefined): Promise<void> {
    if (port === undefined) delete this.#ports[name];
    else this.#ports[name] = port;
    const snapshot = JSON.stringify(this.#ports, null, 2) + '\n';
    this.#writing = this.#writing.then(() => writeFileAtomic(this.#file, snapshot, 0o644));
    return this.#writing;
  }

  static async read(workDir: string): Promise<Partial<Record<ListenerName, number>>> {
    return JSON.parse(await readFile(join(workDir, 'ports.json'), 'utf8')) as Partial<
      Record<ListenerName, number>
    >;
  }
}

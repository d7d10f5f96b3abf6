// A watch that only says "something changed" under a key or prefix, for readers that re-read what
// they need (the cluster worker, the service cache). Re-reading on every change, on every
// (re)connection and after a failed watch makes the reader right whatever the watch missed: a
// reconnection after an etcd restart, a watch cancelled because its revision was compacted.
//
// Each watch has an etcd client of its own (`connect`): etcd3 1.1.2 matches a "created and
// cancelled" answer (a watcher resuming from a compacted revision, e.g. an idle one after an etcd
// restart) to the first pending watcher of its client, which with several watchers on one client
// can be the wrong one; a later answer then names no watcher and the library throws on its gRPC
// stream, ending the process. Alone on its client, a watcher always gets its own answers.
import type { Etcd3, Watcher } from 'etcd3';
import type { Logger } from '../log/logger.ts';

export interface RegistryWatch {
  close(): Promise<void>;
}

const RETRY_MS = 500;

export function watchRegistry(
  connect: () => Etcd3,
  target: { prefix: string } | { key: string },
  onChange: () => void,
  logger: Logger,
): RegistryWatch {
  let closed = false;
  let client: Etcd3 | undefined;
  let watcher: Watcher | undefined;
  let retry: NodeJS.Timeout | undefined;
  const what = 'prefix' in target ? target.prefix : target.key;

  /**
   * A watcher that emitted `error` is gone already (etcd cancelled it, e.g. for a compacted
   * revision): it is dropped, never cancelled again — etcd3 1.1.2 answers the cancel response of an
   * unknown watcher with an exception thrown on its gRPC stream, which would end the daemon.
   */
  const restart = (): void => {
    watcher = undefined;
    if (closed || retry !== undefined) return;
    retry = setTimeout(() => {
      retry = undefined;
      void start();
    }, RETRY_MS);
    retry.unref();
  };

  const start = async (): Promise<void> => {
    if (closed) return;
    try {
      client ??= connect();
      const builder = client.watch();
      const created = await (
        'prefix' in target ? builder.prefix(target.prefix) : builder.key(target.key)
      ).create();
      if (closed) {
        await created.cancel();
        return;
      }
      watcher = created;
      created
        .on('put', onChange)
        .on('delete', onChange)
        .on('connected', onChange)
        .on('error', (error) => {
          logger.warn('registry watch failed; watching again', { key: what, error: error.message });
          restart();
        });
      onChange(); // anything written before the watch existed
    } catch (error) {
      logger.debug('registry watch could not be created; retrying', { key: what, error: error as Error });
      restart();
    }
  };

  void start();
  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      await watcher?.cancel().catch(() => undefined);
      client?.close();
    },
  };
}

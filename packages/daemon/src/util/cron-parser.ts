// cron-parser (with luxon, several MiB once loaded) is loaded on first use: most installations
// have no app with a cron schedule.
import { createRequire } from 'node:module';
import type * as CronParser from 'cron-parser';

let loaded: typeof CronParser | undefined;

/** The cron-parser module, loaded synchronously on the first call. */
export function cronParser(): typeof CronParser {
  // In the bundle (platform's build/build.js) `require` exists and esbuild turns this call into a module of the
  // bundle that is evaluated on this first call; run from the sources (an ES module) there is no
  // `require`, and Node's loads the package.
  loaded ??= (
    typeof require === 'function'
      ? // eslint-disable-next-line @typescript-eslint/no-require-imports
        require('cron-parser')
      : createRequire(import.meta.url)('cron-parser')
  ) as typeof CronParser;
  return loaded;
}

// Terminal output: results on stdout, messages and the spinner on stderr. The spinner appears
// only when stderr is a TTY and a wait lasts longer than a second.
const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const SPINNER_DELAY_MS = 1000;

export class Ui {
  readonly #tty: boolean;
  readonly #quiet: boolean;

  constructor(options: { quiet?: boolean } = {}) {
    this.#tty = process.stderr.isTTY === true && process.env['TERM'] !== 'dumb';
    this.#quiet = options.quiet === true;
  }

  out(text: string): void {
    process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  }

  info(text: string): void {
    if (!this.#quiet) process.stderr.write(`${text}\n`);
  }

  /** Runs `work`, showing `label` with a spinner on stderr if it takes longer than a second. */
  async spin<T>(label: string, work: () => Promise<T>): Promise<T> {
    if (!this.#tty) return work();
    let frame = 0;
    let interval: NodeJS.Timeout | undefined;
    const start = setTimeout(() => {
      interval = setInterval(() => {
        process.stderr.write(`\r${FRAMES[frame++ % FRAMES.length]} ${label}…`);
      }, 80);
    }, SPINNER_DELAY_MS);
    try {
      return await work();
    } finally {
      clearTimeout(start);
      if (interval !== undefined) {
        clearInterval(interval);
        process.stderr.write('\r\x1b[2K');
      }
    }
  }
}

/** Reads all of stdin as text (for --password-stdin and `-f -`). */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Prompts on the terminal without echo. */
export async function promptSecret(prompt: string): Promise<string> {
  const stdin = process.stdin;
  if (stdin.isTTY !== true) throw new Error('no terminal to prompt on');
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.resume();
  return new Promise((resolve, reject) => {
    let value = '';
    const onData = (data: Buffer): void => {
      for (const char of data.toString('utf8')) {
        if (char === '\r' || char === '\n') {
          finish();
          resolve(value);
          return;
        }
        if (char === '\u0003') {
          finish();
          reject(new Error('interrupted'));
          return;
        }
        if (char === '\u007f' || char === '\b') value = value.slice(0, -1);
        else value += char;
      }
    };
    const finish = (): void => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
    };
    stdin.on('data', onData);
  });
}

/** Prompts for a line with echo. */
export async function promptLine(prompt: string): Promise<string> {
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return (await rl.question(prompt)).trim();
  } finally {
    rl.close();
  }
}

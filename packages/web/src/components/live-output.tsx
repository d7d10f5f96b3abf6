// Output of an application that follows live (STDOUT events over WSS) by byte position, filling any
// gap (missed events, a reconnect) with reads from the last position (state/output-follower.ts).
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, errorText } from '../api.ts';
import { live } from '../connection.ts';
import { frameBatcher } from '../state/frame-batch.ts';
import { OutputFollower, type OutputEventData } from '../state/output-follower.ts';

const READ_BYTES = 256 * 1024;

export interface LiveOutputState {
  text: string;
  next: number;
  processUuid: string | undefined;
  finished: boolean;
  exitCode: number | null | undefined;
  error: string | undefined;
}

export function useLiveOutput(name: string, processUuid?: string): LiveOutputState {
  const follower = useMemo(() => new OutputFollower({ processUuid }), [name, processUuid]);
  const [state, setState] = useState<LiveOutputState>({
    text: '',
    next: 0,
    processUuid,
    finished: false,
    exitCode: undefined,
    error: undefined,
  });
  useEffect(() => {
    let stopped = false;
    let exitCode: number | null | undefined;
    let error: string | undefined;
    const render = frameBatcher(() => {
      if (stopped) return;
      setState({
        text: follower.text,
        next: follower.next,
        processUuid: follower.processUuid,
        finished: follower.finished,
        exitCode,
        error,
      });
    });
    let reading: Promise<void> | undefined;
    let again = false;
    const catchUp = (): void => {
      if (reading !== undefined) {
        again = true;
        return;
      }
      reading = (async () => {
        do {
          again = false;
          for (;;) {
            const position = follower.next;
            const chunk = await api.getOutput(name, {
              position,
              maxSize: READ_BYTES,
              ...(follower.processUuid === undefined ? {} : { processUuid: follower.processUuid }),
            });
            if (stopped) return;
            follower.applyRead({ ...chunk, position });
            if (chunk.exitCode !== undefined) exitCode = chunk.exitCode;
            error = undefined;
            render();
            if (chunk.bytes === 0 || chunk.nextPosition <= position) break;
          }
        } while (again && !stopped);
      })()
        .catch((cause: unknown) => {
          error = errorText(cause);
          render();
        })
        .finally(() => (reading = undefined));
    };
    const unsubscribe = live({
      app: name,
      events: ['STDOUT', 'START', 'EXIT'],
      onEvent: (event) => {
        if (event.event_type === 'STDOUT') {
          if (follower.accept(event.data as unknown as OutputEventData) === 'gap') catchUp();
        } else if (event.event_type === 'EXIT') {
          const code = (event.data as { exit_code?: unknown }).exit_code;
          exitCode = typeof code === 'number' ? code : null;
        } else if (event.event_type === 'START') {
          exitCode = undefined;
        }
        render();
      },
      resync: catchUp,
    });
    catchUp();
    return () => {
      stopped = true;
      unsubscribe();
    };
  }, [follower]);
  return state;
}

/** A `<pre>` that stays scrolled to the end while the reader is at the end. */
export function OutputPane({ text, label }: { text: string; label: string }) {
  const pre = useRef<HTMLPreElement>(null);
  const atEnd = useRef(true);
  useEffect(() => {
    const element = pre.current;
    if (element !== null && atEnd.current) element.scrollTop = element.scrollHeight;
  }, [text]);
  return (
    <pre
      ref={pre}
      class="output"
      tabIndex={0}
      aria-label={label}
      data-testid="output"
      onScroll={(e) => {
        const el = e.currentTarget;
        atEnd.current = el.scrollTop + el.clientHeight >= el.scrollHeight - 8;
      }}
    >
      {text === '' ? <span class="muted">(no output yet)</span> : text}
    </pre>
  );
}

// Coalesces the writes of one event-loop turn on a socket: the first write of a turn corks it and
// the check phase (setImmediate) uncorks it, so the responses and pushes made while this turn's
// input is handled (several frames of one read, frames of several connections that became
// readable together, an event pushed to many subscriptions) leave in one TLS record batch and one
// write(2) instead of one each. A write(2) to a loopback peer also runs the peer's receive path
// and wakes it: per write it cost more than the request's JavaScript (bench/README.md, "Where the
// time of a request goes").
import type { Duplex } from 'node:stream';

/** Returns `hold()`: call it before each write of a turn (cheap after the first). */
export function turnWriteBatch(socket: Pick<Duplex, 'cork' | 'uncork'>): () => void {
  let corked = false;
  const release = (): void => {
    corked = false;
    socket.uncork();
  };
  return () => {
    if (corked) return;
    corked = true;
    socket.cork();
    setImmediate(release);
  };
}

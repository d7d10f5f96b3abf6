/** The error a call rejects with when its AbortSignal fires: the signal's reason, or an AbortError. */
export function abortErrorOf(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason : new DOMException('the operation was aborted', 'AbortError');
}

// Wait for a condition with a bounded deadline (never a bare sleep as synchronisation).
// The predicate is re-checked on a short period; the error names what was awaited.
export interface WaitForOptions {
  timeoutMs?: number;
  what?: string;
  /** Re-check period, default 5 ms. */
  intervalMs?: number;
}

export async function waitFor<T>(
  predicate: () => T | undefined | false | null | Promise<T | undefined | false | null>,
  options: WaitForOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await predicate();
      if (value !== undefined && value !== false && value !== null) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${options.what ?? 'a condition'}`, {
        cause: lastError,
      });
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 5));
  }
}

/** Reconnect delay for the `attempt`-th retry (0-based): 0.5 s doubling to 15 s, ±25 % jitter. */
export function nextBackoff(attempt: number, random: number): number {
  const base = Math.min(15_000, 500 * 2 ** Math.min(attempt, 10));
  return Math.round(base * (0.75 + random * 0.5));
}

// The first GET /svc/applications, started as soon as the page is signed in (in parallel with
// reading the principal and loading the list's code); the list view takes it once, if it is fresh.
import type { AppInfo } from '@svc/client/browser';
import { api } from '../api.ts';

const FRESH_MS = 5_000;
let early: { list: Promise<AppInfo[]>; at: number } | undefined;

export function prefetchApplications(now: number = Date.now()): void {
  if (early !== undefined) return;
  early = { list: api.listApplications(), at: now };
  early.list.catch(() => undefined);
}

/** The prefetched list (once, within 5 s of the prefetch), or a fresh read. */
export function firstApplications(now: number = Date.now()): Promise<AppInfo[]> {
  const taken = early;
  early = undefined;
  return taken !== undefined && now - taken.at < FRESH_MS ? taken.list : api.listApplications();
}

// The one password check of the issuer (password grant and the browser/device sign-in form):
// throttled per (user, address) and per address with growing waits, never an account lock
// (sign-in-throttle.ts), and as slow for an unknown login as
// for a known one (a bcrypt compare against a dummy hash), so that response time does not tell
// whether a user exists.
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { AGENT_KEY_HEADER } from '@svc/protocol';
import bcrypt from 'bcryptjs';
import { isLoopbackHost } from '../admin/listen.ts';
import { relayKeyMatches } from '../credentials/relay-key.ts';
import type { SecretBox } from '../credentials/master-key.ts';
import { BCRYPT_COST, verifyPassword } from '../credentials/password.ts';
import type { IdentityStore, UserRecord } from '../store/identity-store.ts';
import type { SignInThrottle } from './sign-in-throttle.ts';
import { TotpVerifier } from './totp.ts';

export type SignInResult =
  | { readonly ok: true; readonly user: UserRecord; readonly userKey: string }
  | { readonly ok: false; readonly reason: 'invalid' }
  | { readonly ok: false; readonly reason: 'locked'; readonly retryAfterMs: number };

/** A browser sign-in whose password was right, waiting for the TOTP code (keyed by interaction). */
interface PendingSecondFactor {
  readonly userId: string;
  readonly userKey: string;
  readonly expiresAt: number;
}

/** How long the code form stays valid after the password, and how many of them are kept. */
const SECOND_FACTOR_MS = 5 * 60_000;
const MAX_PENDING = 10_000;

/** Longest login considered (longer ones are counted under their first 256 characters). */
const MAX_LOGIN_KEY = 256;

/** Where dispatch leaves the verified client address on a request (never a header a client sets). */
const CLIENT_ADDRESS = Symbol('svc.clientAddress');
type AddressedRequest = IncomingMessage & { [CLIENT_ADDRESS]?: string };

/** `::ffff:192.0.2.1` → `192.0.2.1`: one client, one address, whichever socket family it came on. */
function normalizeAddress(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  return mapped === null ? address : mapped[1]!;
}

/**
 * Decides the client address of a request at the issuer once, as it arrives (issue 25 M4), and
 * removes the agent's key header. X-Forwarded-For is believed only when the request comes over
 * loopback with the agent's relay key in X-Svc-Agent-Key (svc-agent replaces any X-Forwarded-For
 * its own clients send with the address it saw); from anyone else it is ignored and the address is
 * the connection's, so a local process sending straight to the issuer port cannot spread its
 * guesses over invented addresses.
 */
export function verifyClientAddress(req: IncomingMessage, relayKey: string | undefined): string {
  const presented = req.headers[AGENT_KEY_HEADER];
  delete req.headers[AGENT_KEY_HEADER];
  const peer = req.socket.remoteAddress ?? 'unknown';
  const forwarded = req.headers['x-forwarded-for'];
  const address =
    typeof forwarded === 'string' &&
    isIP(forwarded) !== 0 &&
    isLoopbackHost(normalizeAddress(peer)) &&
    relayKeyMatches(presented, relayKey)
      ? forwarded
      : peer;
  const normalized = normalizeAddress(address);
  (req as AddressedRequest)[CLIENT_ADDRESS] = normalized;
  return normalized;
}

/** Carries the verified address over to a copy of the request (the provider re-reads bodies). */
export function copyClientAddress(from: IncomingMessage, to: IncomingMessage): void {
  const address = (from as AddressedRequest)[CLIENT_ADDRESS];
  if (address !== undefined) (to as AddressedRequest)[CLIENT_ADDRESS] = address;
}

/** The client address verifyClientAddress decided for `req`, else its connection's address. */
export function clientAddress(req: IncomingMessage): string {
  return (req as AddressedRequest)[CLIENT_ADDRESS] ?? normalizeAddress(req.socket.remoteAddress ?? 'unknown');
}

export class PasswordSignIn {
  readonly throttle: SignInThrottle;
  readonly #store: IdentityStore;
  /** Compared against when the login names nobody: the same bcrypt cost as a real check. */
  readonly #dummyHash = bcrypt.hashSync(randomBytes(16).toString('hex'), BCRYPT_COST);

  readonly #secrets: SecretBox | undefined;
  readonly #totp: TotpVerifier;
  readonly #now: () => number;
  readonly #pending = new Map<string, PendingSecondFactor>();

  constructor(
    store: IdentityStore,
    throttle: SignInThrottle,
    options: { secrets?: SecretBox | undefined; now?: (() => number) | undefined } = {},
  ) {
    this.#store = store;
    this.throttle = throttle;
    this.#secrets = options.secrets;
    this.#now = options.now ?? Date.now;
    this.#totp = new TotpVerifier(this.#now);
  }

  /** Whether `user` must give a TOTP code after the password (MFA turned on for them). */
  mfaRequired(user: UserRecord): boolean {
    return user.mfa_enabled;
  }

  /** Remembers that `uid`'s sign-in passed the password step for `user`. */
  awaitSecondFactor(uid: string, user: UserRecord, userKey: string): void {
    this.#pending.delete(uid);
    this.#pending.set(uid, { userId: user.user_id, userKey, expiresAt: this.#now() + SECOND_FACTOR_MS });
    while (this.#pending.size > MAX_PENDING) {
      const oldest = this.#pending.keys().next();
      if (oldest.done === true) break;
      this.#pending.delete(oldest.value);
    }
  }

  /** Whether `uid` waits for a code (and for whom). */
  pendingSecondFactor(uid: string): PendingSecondFactor | undefined {
    const pending = this.#pending.get(uid);
    if (pending !== undefined && pending.expiresAt <= this.#now()) {
      this.#pending.delete(uid);
      return undefined;
    }
    return pending;
  }

  /**
   * Checks the TOTP code of the sign-in `uid`: throttled like passwords (a wrong code counts as a
   * failed sign-in); on success the pending state ends and the user is returned.
   */
  verifySecondFactor(uid: string, code: string, address: string): SignInResult {
    const pending = this.pendingSecondFactor(uid);
    if (pending === undefined) return { ok: false, reason: 'invalid' };
    const verdict = this.throttle.check(pending.userKey, address);
    if (!verdict.allowed) return { ok: false, reason: 'locked', retryAfterMs: verdict.retryAfterMs };
    const user = this.#store.findById(pending.userId);
    const secret = this.#secretOf(user);
    if (user === undefined || secret === undefined || !this.#totp.verify(user.user_id, secret, code)) {
      this.throttle.failed(pending.userKey, address);
      return { ok: false, reason: 'invalid' };
    }
    this.#pending.delete(uid);
    return { ok: true, user, userKey: pending.userKey };
  }

  #secretOf(user: UserRecord | undefined): string | undefined {
    if (user?.mfa_secret === undefined || this.#secrets === undefined) return undefined;
    try {
      return this.#secrets.decrypt(user.mfa_secret);
    } catch {
      return undefined; // another key or a damaged value: no code can match
    }
  }

  /** The throttle key of a login: the user's id when it names one, else the lower-cased login. */
  userKey(login: string): string {
    const user = this.#store.findByLogin(login);
    return user !== undefined
      ? `id:${user.user_id}`
      : `login:${login.trim().toLowerCase().slice(0, MAX_LOGIN_KEY)}`;
  }

  /** Every key an administrator's unlock of `user` must clear (its id, email and username). */
  keysOf(user: UserRecord): string[] {
    return [
      `id:${user.user_id}`,
      `login:${user.email.toLowerCase()}`,
      `login:${user.username.toLowerCase()}`,
    ];
  }

  async verify(login: string, password: string, address: string): Promise<SignInResult> {
    const userKey = this.userKey(login);
    const verdict = this.throttle.check(userKey, address);
    if (!verdict.allowed) return { ok: false, reason: 'locked', retryAfterMs: verdict.retryAfterMs };
    const user = this.#store.findByLogin(login);
    const ok = await verifyPassword(password, user?.password_hash ?? this.#dummyHash);
    if (user === undefined || !ok) {
      this.throttle.failed(userKey, address);
      return { ok: false, reason: 'invalid' };
    }
    return { ok: true, user, userKey };
  }

  succeeded(userKey: string, address: string): void {
    this.throttle.succeeded(userKey, address);
  }
}

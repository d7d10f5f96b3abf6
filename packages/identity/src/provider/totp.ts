// TOTP second factor (RFC 6238: HMAC-SHA-1, 6 digits, 30-second steps) through `otpauth`. A code is
// accepted for the current step and one step either side (clock drift), and each step at most once
// per user (RFC 6238 §5.2: a verified code is not accepted again).
import { Secret, TOTP } from 'otpauth';

export const TOTP_ISSUER = 'svc';
const DIGITS = 6;
const PERIOD_SECONDS = 30;
/** Steps accepted on each side of the current one. */
const WINDOW = 1;

function totp(secret: string, label: string): TOTP {
  return new TOTP({
    issuer: TOTP_ISSUER,
    label,
    algorithm: 'SHA1',
    digits: DIGITS,
    period: PERIOD_SECONDS,
    secret: Secret.fromBase32(secret),
  });
}

/** A new random secret (160 bits, base32) and its `otpauth://` URI for an authenticator app. */
export function newTotpSecret(label: string): { secret: string; uri: string } {
  const secret = new Secret({ size: 20 }).base32;
  return { secret, uri: totp(secret, label).toString() };
}

/** The code of `secret` at `now` (tests; an authenticator app computes the same). */
export function totpCode(secret: string, now: number): string {
  return totp(secret, 'code').generate({ timestamp: now });
}

export class TotpVerifier {
  readonly #now: () => number;
  /** user_id → the last step accepted (replay guard); bounded by the number of users with MFA. */
  readonly #lastStep = new Map<string, number>();

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  verify(userId: string, secret: string, code: string): boolean {
    const token = code.replace(/\s+/g, '');
    if (!/^\d{6}$/.test(token)) return false;
    const now = this.#now();
    const delta = totp(secret, userId).validate({ token, timestamp: now, window: WINDOW });
    if (delta === null) return false;
    const step = Math.floor(now / 1000 / PERIOD_SECONDS) + delta;
    if ((this.#lastStep.get(userId) ?? -1) >= step) return false;
    this.#lastStep.set(userId, step);
    return true;
  }
}

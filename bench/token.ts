// Figure 7: token verification per request, measured on the daemon's verifier directly against a
// throw-away issuer: first verification of a token (RS256 + claims + cache insert) and the cached
// amortised cost; the floor is one bare RS256 signature verification (node:crypto).
import { createPublicKey, verify as cryptoVerify } from 'node:crypto';
import { startTestIssuer } from '@svc/testkit';
import { createOidcTokenVerifier } from '@svc/daemon';
import { latencyRow, type Benchmark } from './lib/report.ts';
import { log, now, onCleanup, summarize } from './lib/util.ts';

export const tokenBenchmark: Benchmark = {
  name: 'token',
  description: 'token verification: first verify vs cached amortised, vs one bare RS256 verify',
  async run(ctx) {
    const distinct = ctx.quick ? 200 : 1000;
    const repeats = ctx.quick ? 50_000 : 500_000;
    const issuer = await startTestIssuer();
    const closeIssuer = onCleanup('test issuer', () => issuer.close());
    try {
      const verifier = createOidcTokenVerifier({ issuer: issuer.issuer });
      await verifier.verify(await issuer.mint({ sub: 'warm-up' }));
      log(`token: minting ${distinct} tokens`);
      const tokens: string[] = [];
      for (let i = 0; i < distinct; i++) tokens.push(await issuer.mint({ sub: `user-${i}` }));
      const first: number[] = [];
      for (const token of tokens) {
        const t0 = now();
        await verifier.verify(token);
        first.push((now() - t0) * 1000);
      }
      const cachedToken = tokens[0]!;
      for (let i = 0; i < 1000; i++) await verifier.verify(cachedToken);
      let t0 = now();
      for (let i = 0; i < repeats; i++) await verifier.verify(cachedToken);
      const cachedUs = ((now() - t0) * 1000) / repeats;

      // Floor: one RS256 verify of the same token with the issuer's public key, nothing else.
      const jwks = (await (await fetch(issuer.jwksUri)).json()) as { keys: Record<string, unknown>[] };
      const publicKey = createPublicKey({ key: jwks.keys[0]!, format: 'jwk' });
      const [h, p, s] = cachedToken.split('.') as [string, string, string];
      const input = Buffer.from(`${h}.${p}`);
      const signature = Buffer.from(s, 'base64url');
      const floorRuns = distinct;
      const floor: number[] = [];
      for (let i = 0; i < floorRuns; i++) {
        t0 = now();
        if (!cryptoVerify('RSA-SHA256', input, publicKey, signature)) throw new Error('floor verify failed');
        floor.push((now() - t0) * 1000);
      }
      return [
        {
          id: '7',
          title: 'Token verification per request',
          unit: 'µs',
          better: 'lower',
          target: '≤ 10 µs amortised',
          rows: [
            { subject: 'svc cached (amortised)', value: cachedUs, n: repeats },
            latencyRow('svc first verify', summarize(first)),
            latencyRow('floor: one RS256 verify', summarize(floor)),
          ],
        },
      ];
    } finally {
      await closeIssuer();
    }
  },
};

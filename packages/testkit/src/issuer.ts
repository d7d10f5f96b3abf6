// A throw-away OpenID issuer for tests: a real HTTP(S) server on 127.0.0.1, port 0, that serves
// `/.well-known/openid-configuration` and `/jwks` and mints RS256 access tokens shaped like the
// built-in issuer's (oidc-provider JWT access tokens: `sub`, `client_id`, `aud`, `iat`, `exp`, `jti`).
//
// It also mints the classic forgeries (`mintWith`) and counts the requests it serves, so tests can
// prove how a verifier behaves against a real network peer rather than a mock.
import { execFile } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SignJWT, base64url, exportJWK, exportSPKI, generateKeyPair } from 'jose';
import type { CryptoKey, JWK } from 'jose';

export interface MintClaims {
  /** User subject; default `test-user`. Ignored when `clientCredentials` is set. */
  sub?: string;
  /** Default `svc-api`. */
  aud?: string | string[];
  /** Seconds until `exp`; default 900 (the spec's access-token lifetime). Negative = already expired. */
  expiresIn?: number;
  /** Mint a client-credentials token for this client id: `sub` = `client_id` = the id (RFC 9068 §2.2). */
  clientCredentials?: string;
  /** Header `kid`; default the current key's. The signature is still made with the current key. */
  kid?: string;
  /** Header `typ`; default `at+jwt` (RFC 9068, as the built-in issuer sends). */
  typ?: string;
  /** Claim `iss`; default the issuer URL. */
  iss?: string;
  /** Extra claims, merged last (may override anything above). */
  extra?: Record<string, unknown>;
}

export type Forgery =
  'none' | 'HS256-with-public-key' | 'tampered' | 'unknown-kid' | 'expired' | 'wrong-aud' | 'wrong-iss';

export interface TestIssuerOptions {
  /** Serve HTTPS with a throw-away self-signed certificate (see `caPem`). */
  https?: boolean;
  /** Path prefix of the issuer, like the built-in issuer's `/auth`; default none. */
  path?: string;
  /** Port to listen on; default 0 (ephemeral). */
  port?: number;
}

export interface TestIssuer {
  /** The issuer identifier, e.g. `http://127.0.0.1:41234` (no trailing slash). */
  readonly issuer: string;
  readonly jwksUri: string;
  /** PEM of the self-signed certificate when started with `https: true`. */
  readonly caPem: string | undefined;
  /** Requests served so far, by endpoint. */
  readonly requests: { discovery: number; jwks: number };
  /** Kid of the current signing key. */
  readonly kid: string;
  mint(claims?: MintClaims): Promise<string>;
  mintWith(opts: { alg: Forgery }): Promise<string>;
  /** New signing key with a new kid; the old key is removed from the JWKS. */
  rotateKey(): Promise<void>;
  /** The `issuer` the discovery document advertises; default the real one. For mismatch tests. */
  setAdvertisedIssuer(issuer: string | undefined): void;
  /** Stop listening (connections are refused) without forgetting keys; `start()` listens again on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
  publicPem: string;
}

async function newSigningKey(): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = randomUUID();
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  return { kid, privateKey, publicJwk, publicPem: await exportSPKI(publicKey) };
}

/** A throw-away self-signed certificate for 127.0.0.1 (openssl), for test servers. */
export async function selfSignedCertificate(
  commonName = 'svc test issuer',
): Promise<{ key: string; cert: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-test-cert-'));
  try {
    const keyFile = join(dir, 'key.pem');
    const certFile = join(dir, 'cert.pem');
    await promisify(execFile)('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      `/CN=${commonName}`,
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ]);
    return { key: await readFile(keyFile, 'utf8'), cert: await readFile(certFile, 'utf8') };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function encodeSegment(value: unknown): string {
  return base64url.encode(JSON.stringify(value));
}

export async function startTestIssuer(options: TestIssuerOptions = {}): Promise<TestIssuer> {
  const prefix = (options.path ?? '').replace(/\/+$/, '');
  const tls = options.https === true ? await selfSignedCertificate() : undefined;
  let key = await newSigningKey();
  let advertisedIssuer: string | undefined;
  const requests = { discovery: 0, jwks: 0 };

  const handler: http.RequestListener = (req, res) => {
    const url = req.url ?? '/';
    const send = (status: number, body: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'GET' && url === `${prefix}/.well-known/openid-configuration`) {
      requests.discovery += 1;
      send(200, {
        issuer: advertisedIssuer ?? issuer,
        jwks_uri: jwksUri,
        token_endpoint: `${issuer}/token`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
      });
    } else if (req.method === 'GET' && url === `${prefix}/jwks`) {
      requests.jwks += 1;
      send(200, { keys: [key.publicJwk] });
    } else {
      send(404, { error: 'not_found' });
    }
  };

  const server = tls === undefined ? http.createServer(handler) : https.createServer(tls, handler);
  server.keepAliveTimeout = 1000;
  const listen = (port: number): Promise<void> =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  const stopListening = (): Promise<void> =>
    new Promise((resolve) => {
      if (!server.listening) {
        resolve();
        return;
      }
      server.close(() => resolve());
      server.closeAllConnections();
    });

  await listen(options.port ?? 0);
  const port = (server.address() as AddressInfo).port;
  const issuer = `${tls === undefined ? 'http' : 'https'}://127.0.0.1:${port}${prefix}`;
  const jwksUri = `${issuer}/jwks`;

  const sign = async (
    payload: Record<string, unknown>,
    kid: string,
    signer: SigningKey,
    typ = 'at+jwt',
  ): Promise<string> =>
    new SignJWT(payload).setProtectedHeader({ alg: 'RS256', typ, kid }).sign(signer.privateKey);

  const claimsFor = (claims: MintClaims): Record<string, unknown> => {
    const now = Math.floor(Date.now() / 1000);
    const user =
      claims.clientCredentials === undefined
        ? { sub: claims.sub ?? 'test-user', client_id: 'svc-cli' }
        : { sub: claims.clientCredentials, client_id: claims.clientCredentials };
    return {
      iss: claims.iss ?? issuer,
      aud: claims.aud ?? 'svc-api',
      iat: now,
      exp: now + (claims.expiresIn ?? 900),
      jti: randomUUID(),
      scope: 'openid',
      ...user,
      ...claims.extra,
    };
  };

  const testIssuer: TestIssuer = {
    issuer,
    jwksUri,
    caPem: tls?.cert,
    requests,
    get kid() {
      return key.kid;
    },
    async mint(claims = {}) {
      return sign(claimsFor(claims), claims.kid ?? key.kid, key, claims.typ);
    },
    async mintWith({ alg }) {
      switch (alg) {
        case 'none':
          return `${encodeSegment({ alg: 'none', typ: 'JWT' })}.${encodeSegment(claimsFor({}))}.`;
        case 'HS256-with-public-key': {
          // The key-confusion attack: an HMAC "signed" with the issuer's public key as the secret.
          const input = `${encodeSegment({ alg: 'HS256', typ: 'JWT', kid: key.kid })}.${encodeSegment(claimsFor({}))}`;
          const mac = createHmac('sha256', key.publicPem).update(input).digest();
          return `${input}.${base64url.encode(mac)}`;
        }
        case 'tampered': {
          const [header, , signature] = (await testIssuer.mint()).split('.');
          return `${header}.${encodeSegment(claimsFor({ sub: 'admin' }))}.${signature}`;
        }
        case 'unknown-kid': {
          const stranger = await newSigningKey();
          return sign(claimsFor({}), stranger.kid, stranger);
        }
        case 'expired':
          return testIssuer.mint({ expiresIn: -3600 });
        case 'wrong-aud':
          return testIssuer.mint({ aud: 'some-other-api' });
        case 'wrong-iss':
          return testIssuer.mint({ iss: 'http://127.0.0.1:1/not-the-issuer' });
      }
    },
    async rotateKey() {
      key = await newSigningKey();
    },
    setAdvertisedIssuer(value) {
      advertisedIssuer = value;
    },
    stop: stopListening,
    async start() {
      if (!server.listening) await listen(port);
    },
    close: stopListening,
    [Symbol.asyncDispose]: stopListening,
  };
  return testIssuer;
}

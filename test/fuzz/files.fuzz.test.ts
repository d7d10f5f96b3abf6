// Property-based fuzzing of the files the daemon and the identity service read at start-up: app
// files (work/apps/<name>.yaml via AppStore), config files (config/config.yaml) and the credential
// files of work/auth/secrets. A bad file is reported with the module's error type (or listed by
// AppStore) and left untouched; a good one loads. docs/reliability.md.
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  FUZZ_TIMEOUT_MS,
  fuzzParameters,
  hostileYaml,
  expectDocumentedError,
  validAppBody,
} from '@svc/testkit';
import { AppStore, createSecretCrypter, parseAppDefinition, serializeApp } from '@svc/daemon';
import {
  CredentialError,
  formatCredentialFile,
  parseCredentialFile,
  STATIC_IDENTITIES,
} from '@svc/identity';
import { ConfigError, readConfigFile } from '@svc/platform/config';

const crypter = createSecretCrypter(randomBytes(32));
let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-fuzz-files-'));
  // The yaml library reports unknown tags (`!!js/function`) as process warnings; they are expected here.
  vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
});
afterAll(async () => {
  vi.restoreAllMocks();
  await rm(root, { recursive: true, force: true });
});

let counter = 0;
async function freshDir(): Promise<string> {
  const dir = join(root, String(counter++));
  await mkdir(dir);
  return dir;
}

describe('fuzz: work/apps/<name>.yaml loading', { timeout: FUZZ_TIMEOUT_MS }, () => {
  it('loads every good file, lists every bad one with a reason, and touches none', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(validAppBody, { maxLength: 4 }),
        fc.array(hostileYaml, { maxLength: 4 }),
        async (good, bad) => {
          const dir = await freshDir();
          const store = new AppStore(dir, crypter);
          const goodDefs = new Map(good.map((b) => [b['name'] as string, parseAppDefinition(b, { now: 1 })]));
          for (const def of goodDefs.values()) await store.save(def);
          const badFiles = new Map(bad.map((text, i) => [`zz-bad-${i}.yaml`, text]));
          for (const [file, text] of badFiles) await writeFile(join(dir, file), text);
          const loaded = await store.loadAll();
          // Every good app loads unchanged; a bad file loads only if valid and named after its file.
          for (const [name, def] of goodDefs) expect(loaded.apps.find((d) => d.name === name)).toEqual(def);
          expect(loaded.apps.length + loaded.errors.length).toBe(goodDefs.size + badFiles.size);
          for (const { error } of loaded.errors) expect(error.length).toBeGreaterThan(0);
          for (const [file, text] of badFiles) expect(await readFile(join(dir, file), 'utf8')).toBe(text);
          expect((await readdir(dir)).filter((f) => f.startsWith('.tmp-') && !f.includes('pool'))).toEqual(
            [],
          );
          await rm(dir, { recursive: true, force: true });
        },
      ),
      fuzzParameters(60),
    );
  });

  it('an app file with a valid definition under another name is refused, not loaded', async () => {
    await fc.assert(
      fc.asyncProperty(validAppBody, async (body) => {
        const dir = await freshDir();
        const def = parseAppDefinition(body, { now: 1 });
        await new AppStore(dir, crypter).save(def);
        await writeFile(join(dir, 'other-name.yaml'), serializeApp(def, crypter));
        const loaded = await new AppStore(dir, crypter).loadAll();
        if (def.name !== 'other-name')
          expect(loaded.errors.map((e) => e.file)).toEqual([join(dir, 'other-name.yaml')]);
        await rm(dir, { recursive: true, force: true });
      }),
      fuzzParameters(30),
    );
  });
});

describe('fuzz: config/config.yaml', { timeout: FUZZ_TIMEOUT_MS }, () => {
  it('any file content is a ConfigFile or a ConfigError naming the file', async () => {
    const file = join(root, 'config.yaml');
    const configish = fc
      .dictionary(
        fc.constantFrom('rest_port', 'tcp_port', 'limits', 'labels', 'tls', 'log_level', 'oidc_issuer', 'x'),
        fc.oneof(
          fc.jsonValue({ maxDepth: 2 }),
          fc.dictionary(
            fc.constantFrom('max_connections', 'max_body_bytes', 'y'),
            fc.jsonValue({ maxDepth: 1 }),
          ),
        ),
        { maxKeys: 5 },
      )
      .map((o) => JSON.stringify(o));
    await fc.assert(
      fc.asyncProperty(fc.oneof(hostileYaml, configish), async (text) => {
        await writeFile(file, text);
        try {
          await readConfigFile(file);
        } catch (error) {
          expectDocumentedError(ConfigError, error);
          expect((error as Error).message).toContain(file);
        }
      }),
      fuzzParameters(300),
    );
  });
});

describe('fuzz: credential files', { timeout: FUZZ_TIMEOUT_MS }, () => {
  const identity = fc.constantFrom('admin' as const, 'guest' as const);
  const hash = fc
    .tuple(fc.constantFrom('a', 'b', 'y'), fc.stringMatching(/^[./A-Za-z0-9]{53}$/))
    .map(([v, rest]) => `$2${v}$10$${rest}`);
  const password = fc
    .string({ minLength: 1, maxLength: 72 })
    .filter((p) => !/[\r\n\0]/.test(p) && Buffer.byteLength(p) <= 72);

  it('any text is a credential or a CredentialError naming the file (and never echoing a secret)', () => {
    const line = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.constantFrom('username=admin', 'email=admin@svc.local', 'user_id=admin', 'password_hash=', '#', '='),
      hash.map((h) => `password_hash=${h}`),
    );
    fc.assert(
      fc.property(
        identity,
        fc.array(line, { maxLength: 8 }),
        fc.constantFrom('\n', '\r\n'),
        (who, lines, eol) => {
          try {
            parseCredentialFile(lines.join(eol), '/x/creds', who);
          } catch (error) {
            expectDocumentedError(CredentialError, error);
            expect((error as Error).message.startsWith('/x/creds')).toBe(true);
            const secret = lines.find((l) => l.startsWith('password='))?.slice('password='.length);
            if (secret !== undefined && secret.length >= 8)
              expect((error as Error).message).not.toContain(secret);
          }
        },
      ),
      fuzzParameters(1000),
    );
  });

  it('a valid credential round-trips through its file format', () => {
    fc.assert(
      fc.property(identity, hash, fc.option(password, { nil: undefined }), (who, h, pw) => {
        const credential = {
          ...STATIC_IDENTITIES[who],
          password_hash: h,
          ...(pw === undefined ? {} : { password: pw }),
        };
        const parsed = parseCredentialFile(formatCredentialFile(credential), 'f', who);
        expect(parsed).toEqual({
          identity: who,
          username: credential.username,
          email: credential.email,
          user_id: credential.user_id,
          password_hash: h,
          ...(pw === undefined ? {} : { password: pw }),
        });
      }),
      fuzzParameters(300),
    );
  });
});

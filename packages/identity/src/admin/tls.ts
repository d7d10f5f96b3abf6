// Mutual-TLS material of the administrative gRPC API, generated at first use into
// `work/auth/admin-tls/` (directory 0700, key files 0600):
//   ca.pem                the admin CA (its private key is discarded once both certificates are signed:
//                         nobody can mint another client certificate; delete the directory to re-issue)
//   server.pem/-key.pem   the gRPC server certificate (IP SAN 127.0.0.1 and ::1, DNS localhost)
//   client.pem/-key.pem   the one client certificate, used by the administration UI
// The svc-identity process (gRPC server) and svc-auth-admin (client) may both start first: each
// generates into a private temp directory and renames it into place; the loser of the rename
// discards its own material and reads the winner's, so both always agree.
import { randomBytes, webcrypto } from 'node:crypto';
import { chmod, mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type * as X509 from '@peculiar/x509';
import { KEY_ALGORITHM, loadX509, SIGNING_ALGORITHM, TEN_YEARS_MS } from '@svc/platform/tls';

export interface AdminTlsMaterial {
  readonly caCert: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
}

export const ADMIN_TLS_FILES = {
  caCert: 'ca.pem',
  serverCert: 'server.pem',
  serverKey: 'server-key.pem',
  clientCert: 'client.pem',
  clientKey: 'client-key.pem',
} as const satisfies Record<keyof AdminTlsMaterial, string>;

const KEY_FILES: ReadonlySet<string> = new Set([ADMIN_TLS_FILES.serverKey, ADMIN_TLS_FILES.clientKey]);

export function adminTlsDir(workDir: string): string {
  return join(workDir, 'auth', 'admin-tls');
}

/** The material of `work/auth/admin-tls/`, generated when the directory does not exist yet. */
export async function loadOrCreateAdminTls(workDir: string): Promise<AdminTlsMaterial> {
  const dir = adminTlsDir(workDir);
  const existing = await readMaterial(dir);
  if (existing !== undefined) return existing;
  await mkdir(join(workDir, 'auth'), { recursive: true, mode: 0o700 });
  const material = await generateAdminTls();
  const temp = join(workDir, 'auth', `.tmp-admin-tls.${randomBytes(6).toString('hex')}`);
  await mkdir(temp, { mode: 0o700 });
  try {
    await chmod(temp, 0o700);
    for (const [field, name] of Object.entries(ADMIN_TLS_FILES) as [keyof AdminTlsMaterial, string][]) {
      const handle = await open(join(temp, name), 'wx', KEY_FILES.has(name) ? 0o600 : 0o644);
      try {
        await handle.chmod(KEY_FILES.has(name) ? 0o600 : 0o644);
        await handle.writeFile(material[field]);
        await handle.sync();
      } finally {
        await handle.close();
      }
    }
    try {
      await rename(temp, dir);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error;
      // Another process placed its material first: use that one.
      const winner = await readMaterial(dir);
      if (winner === undefined) throw error;
      return winner;
    }
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
  return material;
}

async function readMaterial(dir: string): Promise<AdminTlsMaterial | undefined> {
  const read = async (name: string): Promise<string> => readFile(join(dir, name), 'utf8');
  try {
    return {
      caCert: await read(ADMIN_TLS_FILES.caCert),
      serverCert: await read(ADMIN_TLS_FILES.serverCert),
      serverKey: await read(ADMIN_TLS_FILES.serverKey),
      clientCert: await read(ADMIN_TLS_FILES.clientCert),
      clientKey: await read(ADMIN_TLS_FILES.clientKey),
    };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function toPem(der: ArrayBuffer, label: string): string {
  const base64 = Buffer.from(der).toString('base64');
  return `-----BEGIN ${label}-----\n${base64.match(/.{1,64}/g)!.join('\n')}\n-----END ${label}-----\n`;
}

/**
 * A fresh CA with one server and one client certificate (ECDSA P-256, ten years), in memory.
 * Exported for tests, which need a second, foreign CA.
 */
export async function generateAdminTls(caName = 'svc admin gRPC CA'): Promise<AdminTlsMaterial> {
  const x509 = await loadX509();
  const subtle = webcrypto.subtle;
  const now = Date.now();
  const validity = { notBefore: new Date(now - 60_000), notAfter: new Date(now + TEN_YEARS_MS) };
  const caKeys = await subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${caName}`,
    keys: caKeys,
    signingAlgorithm: SIGNING_ALGORITHM,
    ...validity,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const leaf = async (
    subject: string,
    usage: X509.ExtendedKeyUsageType,
    names: { type: 'ip' | 'dns'; value: string }[],
  ): Promise<{ cert: string; key: string }> => {
    const keys = await subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
    const cert = await x509.X509CertificateGenerator.create({
      subject: `CN=${subject}`,
      issuer: caCert.subject,
      publicKey: keys.publicKey,
      signingKey: caKeys.privateKey,
      signingAlgorithm: SIGNING_ALGORITHM,
      serialNumber: randomBytes(16)
        .toString('hex')
        .replace(/^[89a-f]/, '1'),
      ...validity,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(
          x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
          true,
        ),
        new x509.ExtendedKeyUsageExtension([usage]),
        ...(names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names)] : []),
        await x509.AuthorityKeyIdentifierExtension.create(caCert),
      ],
    });
    return {
      cert: cert.toString('pem') + '\n',
      key: toPem(await subtle.exportKey('pkcs8', keys.privateKey), 'PRIVATE KEY'),
    };
  };
  const server = await leaf('svc admin gRPC server', x509.ExtendedKeyUsage.serverAuth, [
    { type: 'ip', value: '127.0.0.1' },
    { type: 'ip', value: '::1' },
    { type: 'dns', value: 'localhost' },
  ]);
  const client = await leaf('svc-auth-admin', x509.ExtendedKeyUsage.clientAuth, []);
  return {
    caCert: caCert.toString('pem') + '\n',
    serverCert: server.cert,
    serverKey: server.key,
    clientCert: client.cert,
    clientKey: client.key,
  };
}

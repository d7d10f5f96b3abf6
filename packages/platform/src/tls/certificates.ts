// TLS material for the daemon listeners: the configured certificate and key when given, else a CA
// and a server certificate generated once into work/ssl/ (SAN: 127.0.0.1, ::1, localhost, the host
// name). Clients trust work/ssl/ca.pem.
import { webcrypto } from 'node:crypto';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../atomic-file.ts';
import { KEY_ALGORITHM, loadX509, SIGNING_ALGORITHM, TEN_YEARS_MS } from './x509.ts';

export interface TlsMaterial {
  key: string;
  cert: string;
  /** PEM of the CA that signed `cert` (the generated one, or the configured `ca_file`). */
  ca: string | undefined;
}

export async function loadTlsMaterial(options: {
  workDir: string;
  hostName: string;
  configured: { certFile: string; keyFile: string; caFile: string | undefined } | undefined;
}): Promise<TlsMaterial> {
  if (options.configured !== undefined) {
    const { certFile, keyFile, caFile } = options.configured;
    return {
      cert: await readFile(certFile, 'utf8'),
      key: await readFile(keyFile, 'utf8'),
      ca: caFile === undefined ? undefined : await readFile(caFile, 'utf8'),
    };
  }
  const dir = join(options.workDir, 'ssl');
  const files = { ca: join(dir, 'ca.pem'), cert: join(dir, 'server.pem'), key: join(dir, 'server-key.pem') };
  if (await exists(files.cert)) {
    return {
      cert: await readFile(files.cert, 'utf8'),
      key: await readFile(files.key, 'utf8'),
      ca: (await exists(files.ca)) ? await readFile(files.ca, 'utf8') : undefined,
    };
  }
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const material = await generateMaterial(options.hostName);
  await writeFileAtomic(files.key, material.key, { mode: 0o600 });
  await writeFileAtomic(files.ca, material.ca!, { mode: 0o644 });
  await writeFileAtomic(files.cert, material.cert, { mode: 0o644 });
  return material;
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}

function toPem(der: ArrayBuffer, label: string): string {
  const base64 = Buffer.from(der).toString('base64');
  return `-----BEGIN ${label}-----\n${base64.match(/.{1,64}/g)!.join('\n')}\n-----END ${label}-----\n`;
}

export async function generateMaterial(hostName: string): Promise<TlsMaterial> {
  const x509 = await loadX509();
  const subtle = webcrypto.subtle;
  const now = Date.now();
  const caKeys = await subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
  const caName = `CN=svc local CA ${hostName}`;
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    name: caName,
    keys: caKeys,
    signingAlgorithm: SIGNING_ALGORITHM,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + TEN_YEARS_MS),
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const serverKeys = await subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
  const names = new Set(['localhost', hostName]);
  const serverCert = await x509.X509CertificateGenerator.create({
    subject: `CN=${hostName}`,
    issuer: caCert.subject,
    publicKey: serverKeys.publicKey,
    signingKey: caKeys.privateKey,
    signingAlgorithm: SIGNING_ALGORITHM,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + TEN_YEARS_MS),
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([
        x509.ExtendedKeyUsage.serverAuth,
        x509.ExtendedKeyUsage.clientAuth,
      ]),
      new x509.SubjectAlternativeNameExtension([
        { type: 'ip', value: '127.0.0.1' },
        { type: 'ip', value: '::1' },
        ...[...names].map((value) => ({ type: 'dns' as const, value })),
      ]),
    ],
  });
  const pkcs8 = await subtle.exportKey('pkcs8', serverKeys.privateKey);
  return {
    key: toPem(pkcs8, 'PRIVATE KEY'),
    cert: serverCert.toString('pem') + '\n',
    ca: caCert.toString('pem') + '\n',
  };
}

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startTestDaemon, restClient } from '@svc/testkit';
const REPO = join(import.meta.dirname, '../../..');
const d = await startTestDaemon({
  agent: true,
  env: {
    SVC_AUTH_MODE: 'builtin',
    SVC_OIDC_ISSUER: '',
    SVC_ISSUER_PORT: '0',
    SVC_AUTH_TELEMETRY_PORT: '0',
    SVC_AUTH_GRPC_LISTEN: '127.0.0.1:0',
  },
  files: { 'apps/identity.yaml': await readFile(join(REPO, 'apps', 'identity.yaml'), 'utf8') },
});
try {
  const a = await d.agent();
  const c = restClient(a.agentUrl, d.ca);
  for (let i = 0; i < 100; i++) {
    const p = await d.ports();
    if (p.issuer) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const disc = await c.call('GET', '/auth/.well-known/openid-configuration');
  console.log(disc.status, disc.text().slice(0, 900));
  const text = await readFile(join(d.workDir, 'auth/secrets/initial-admin-credentials'), 'utf8');
  const pw = /^password=(.*)$/m.exec(text)![1]!;
  const tok = await c.call('POST', '/auth/token', {
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    rawBody: new URLSearchParams({
      grant_type: 'password',
      client_id: 'svc-cli',
      username: 'admin@svc.local',
      password: pw,
      scope: 'openid audience:server:client_id:svc-api',
    }).toString(),
  });
  console.log(tok.status, tok.text().slice(0, 300));
  const ext = await c.call('GET', '/');
  console.log(ext.status, ext.text());
  const dev = await c.call('POST', '/auth/device/auth', {
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    rawBody: 'client_id=svc-cli&scope=openid',
  });
  console.log(dev.status, dev.text());
  const au = await c.call(
    'GET',
    '/auth/auth?client_id=svc-cli&response_type=code&redirect_uri=http://127.0.0.1:5555/cb&scope=openid&code_challenge=abcabcabcabcabcabcabcabcabcabcabcabcabcabca&code_challenge_method=S256',
  );
  console.log(au.status, au.headers['location']);
} finally {
  await d.close();
}

#!/usr/bin/env node
// A stand-in OIDC issuer for trying svc before the built-in identity provider exists: it listens
// where the built-in issuer will (http://127.0.0.1:6062/auth), and prints a 15-minute access token
// for the seeded `admin` principal (role svc-admin). Development only: it signs whatever it is asked.
import { startTestIssuer } from '../src/issuer.ts';

const port = Number(process.env['SVC_ISSUER_PORT'] ?? 6062);
const sub = process.argv[2] ?? 'admin';
const issuer = await startTestIssuer({ port, path: '/auth' });
const token = await issuer.mint({ sub });
process.stderr.write(`dev issuer ${issuer.issuer} (Ctrl-C to stop); access token for "${sub}" on stdout\n`);
process.stdout.write(token + '\n');
const stop = (): void => void issuer.close().then(() => process.exit(0));
process.once('SIGINT', stop);
process.once('SIGTERM', stop);

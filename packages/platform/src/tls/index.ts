// @svc/platform/tls: the TLS material svcd creates and svc-agent serves with (certificates.ts), and
// the X.509 helpers svc-identity's admin API uses for its own certificates (x509.ts).
export * from './certificates.ts';
export * from './x509.ts';

// The Registry section (cluster mode, spec "Cluster configuration block"; CONTRACT §9): which etcd
// endpoints, the session TTL, the node's roles and the TLS files for etcd. Pure: the effective
// `Registry` document and the environment in, a validated `ClusterConfig` (or undefined when the
// node runs stand-alone) out; a bad value is a ConfigError naming its source.
import { resolve } from 'node:path';
import type { ConfigDocument } from './config-schema.ts';

export interface ClusterConfig {
  /** etcd client endpoints, `http(s)://host:port` each (SVC_REGISTRY_URL or Registry.Url). */
  urls: string[];
  isMainNode: boolean;
  isWorkerNode: boolean;
  sessionTtlSeconds: number;
  enableRegistrySecurity: boolean;
  /** Registry.SvcProxyUrl: the `svc` address of the node report instead of the listen address. */
  svcProxyUrl: string | undefined;
  /** PEM files for an `https://` registry: CA of etcd's certificate, client certificate and key. */
  tls: { caFile: string | undefined; certFile: string | undefined; keyFile: string | undefined } | undefined;
}

export const DEFAULT_SESSION_TTL_SECONDS = 30;
const MAX_ENDPOINTS = 32;

export class RegistryConfigError extends Error {}

/** Parses a comma-separated endpoint list; throws RegistryConfigError with a reason (no URL echoed). */
export function parseRegistryUrls(value: string): string[] {
  if (value.length > 4096) throw new RegistryConfigError('longer than 4096 characters');
  const parts = value
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
  if (parts.length === 0) throw new RegistryConfigError('no endpoint');
  if (parts.length > MAX_ENDPOINTS) throw new RegistryConfigError(`more than ${MAX_ENDPOINTS} endpoints`);
  const urls = parts.map((part, index) => {
    let url: URL;
    try {
      url = new URL(part);
    } catch {
      throw new RegistryConfigError(`endpoint ${index + 1} is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new RegistryConfigError(`endpoint ${index + 1}: expected http:// or https://`);
    if (url.username !== '' || url.password !== '')
      throw new RegistryConfigError(`endpoint ${index + 1}: credentials in the URL are not supported`);
    if ((url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.hash !== '')
      throw new RegistryConfigError(`endpoint ${index + 1}: only scheme, host and port are allowed`);
    if (url.port === '') throw new RegistryConfigError(`endpoint ${index + 1}: the port is required`);
    return `${url.protocol}//${url.host}`;
  });
  const schemes = new Set(urls.map((url) => url.slice(0, url.indexOf(':'))));
  if (schemes.size > 1) throw new RegistryConfigError('endpoints mix http:// and https://');
  return urls;
}

/**
 * Registry.SvcProxyUrl (App Mesh's AppmeshProxyUrl, "expose URL"): the address other nodes and
 * clients reach this node at when it is not its listen address (a proxy, NAT): an `https://` origin.
 */
function proxyUrlOf(value: string, fail: (message: string) => Error): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw fail('Registry.SvcProxyUrl: not a URL');
  }
  if (url.protocol !== 'https:') throw fail('Registry.SvcProxyUrl: expected https://');
  if (url.username !== '' || url.password !== '')
    throw fail('Registry.SvcProxyUrl: credentials in the URL are not supported');
  if ((url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.hash !== '')
    throw fail('Registry.SvcProxyUrl: only scheme, host and port are allowed');
  return url.origin;
}

/**
 * The cluster configuration, or undefined when neither SVC_REGISTRY_URL nor Registry.Url is set.
 * `fail` turns a problem into the caller's error type (config.ts: ConfigError).
 */
export function clusterConfigOf(
  home: string,
  registry: NonNullable<ConfigDocument['Registry']>,
  env: NodeJS.ProcessEnv,
  fail: (message: string) => Error,
): ClusterConfig | undefined {
  const fromEnv = env['SVC_REGISTRY_URL'];
  const source = fromEnv ? 'SVC_REGISTRY_URL' : 'Registry.Url';
  const raw = fromEnv || registry.Url;
  if (raw === undefined || raw === null || raw === '') return undefined;
  let urls: string[];
  try {
    urls = parseRegistryUrls(raw);
  } catch (error) {
    throw fail(`${source}: ${(error as Error).message}`);
  }
  const ttlEnv = env['SVC_REGISTRY_SESSION_TTL'];
  let sessionTtlSeconds = registry.SessionTTL ?? DEFAULT_SESSION_TTL_SECONDS;
  if (ttlEnv !== undefined && ttlEnv !== '') {
    sessionTtlSeconds = Number(ttlEnv);
    if (!/^\d{1,5}$/.test(ttlEnv) || sessionTtlSeconds < 1 || sessionTtlSeconds > 86_400)
      throw fail('SVC_REGISTRY_SESSION_TTL: expected whole seconds from 1 to 86400');
  }
  if (sessionTtlSeconds < 2) throw fail('Registry.SessionTTL: at least 2 seconds in cluster mode');
  const secure = urls[0]!.startsWith('https://');
  const ssl = registry.SSL ?? undefined;
  if (!secure && ssl !== undefined) throw fail(`Registry.SSL is set but ${source} is not https://`);
  if (ssl !== undefined && (ssl.CertFile === undefined) !== (ssl.KeyFile === undefined))
    throw fail('Registry.SSL: CertFile and KeyFile go together (a client certificate and its key)');
  const svcProxyUrl = registry.SvcProxyUrl ? proxyUrlOf(registry.SvcProxyUrl, fail) : undefined;
  const file = (path: string | undefined): string | undefined =>
    path === undefined || path === '' ? undefined : resolve(home, path);
  return {
    urls,
    isMainNode: registry.IsMainNode ?? true,
    isWorkerNode: registry.IsWorkerNode ?? true,
    sessionTtlSeconds,
    enableRegistrySecurity: registry.EnableRegistrySecurity ?? true,
    svcProxyUrl,
    tls: secure
      ? { caFile: file(ssl?.CaFile), certFile: file(ssl?.CertFile), keyFile: file(ssl?.KeyFile) }
      : undefined,
  };
}

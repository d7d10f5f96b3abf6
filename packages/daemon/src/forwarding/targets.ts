// Forward targets: parsing `X-Target-Host: host[:port]` (the target's TCP API address, CONTRACT §4)
// and deciding which targets the operator allows. A gateway must never become an open proxy, so a
// target is reachable only when some provider vouches for it; stand-alone that is the static list
// (SVC_FORWARD_TARGETS / REST.ForwardTargets), in cluster mode the registry adds its nodes through
// `AllowedTargets.addProvider`.
import { isIP } from 'node:net';
import { SvcError } from '@svc/protocol';

/** The TCP API port a target listens on when X-Target-Host names none (CONTRACT §3). */
export const DEFAULT_TARGET_PORT = 6059;

export interface TargetAddress {
  /** Lower-cased host name or IP literal (IPv6 without brackets). */
  readonly host: string;
  readonly port: number;
}

/** Where to connect for an allowed target; a cluster provider may map a node name to an address. */
export interface ResolvedTarget extends TargetAddress {
  /** Stable key of the target (pool key, logs): `host:port` as named by the client. */
  readonly key: string;
}

const HOST_NAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

/** Parses `host[:port]` or `[v6]:port`. Throws SvcError('invalid_target_host'). */
export function parseTargetHost(value: string): TargetAddress {
  const text = value.trim().toLowerCase();
  let host: string;
  let portText: string | undefined;
  const bracketed = /^\[([0-9a-f:.]+)\](?::(\d{1,5}))?$/.exec(text);
  if (bracketed !== null) {
    host = bracketed[1]!;
    portText = bracketed[2];
    if (isIP(host) !== 6) throw invalid(value);
  } else if (isIP(text) === 6) {
    host = text;
  } else {
    const colon = text.lastIndexOf(':');
    host = colon === -1 ? text : text.slice(0, colon);
    portText = colon === -1 ? undefined : text.slice(colon + 1);
    if (isIP(host) !== 4 && !HOST_NAME.test(host)) throw invalid(value);
  }
  let port = DEFAULT_TARGET_PORT;
  if (portText !== undefined) {
    if (!/^\d{1,5}$/.test(portText)) throw invalid(value);
    port = Number(portText);
    if (port < 1 || port > 65535) throw invalid(value);
  }
  return { host, port };
}

function invalid(value: string): SvcError {
  // The value is client input: quote a bounded prefix only.
  return new SvcError(
    'invalid_target_host',
    `X-Target-Host ${JSON.stringify(value.slice(0, 64))} is not host[:port] (a target's TCP API address)`,
  );
}

export function targetKey(target: TargetAddress): string {
  return `${target.host.includes(':') ? `[${target.host}]` : target.host}:${target.port}`;
}

/** A source of allowed targets. Returns where to connect, or undefined when it does not know it. */
export interface ForwardTargetProvider {
  resolve(target: TargetAddress): ResolvedTarget | undefined;
}

/**
 * The operator's list (SVC_FORWARD_TARGETS / REST.ForwardTargets). Read live: POST /svc/config may
 * replace it at run time. An entry that is not host[:port] allows nothing.
 */
export function staticTargets(entries: () => readonly string[]): ForwardTargetProvider {
  let source: readonly string[] | undefined;
  let allowed = new Map<string, ResolvedTarget>();
  return {
    resolve(target) {
      const current = entries();
      if (current !== source) {
        source = current;
        allowed = new Map();
        for (const entry of current) {
          try {
            const parsed = parseTargetHost(entry);
            allowed.set(targetKey(parsed), { ...parsed, key: targetKey(parsed) });
          } catch {
            // not a target: allows nothing
          }
        }
      }
      return allowed.get(targetKey(target));
    },
  };
}

/** All providers together; the first that knows a target wins. */
export class AllowedTargets implements ForwardTargetProvider {
  readonly #providers: ForwardTargetProvider[];

  constructor(providers: readonly ForwardTargetProvider[]) {
    this.#providers = [...providers];
  }

  /** Hook for cluster mode: registered nodes become allowed targets. Returns a remover. */
  addProvider(provider: ForwardTargetProvider): () => void {
    this.#providers.push(provider);
    return () => {
      const index = this.#providers.indexOf(provider);
      if (index !== -1) this.#providers.splice(index, 1);
    };
  }

  resolve(target: TargetAddress): ResolvedTarget | undefined {
    for (const provider of this.#providers) {
      const resolved = provider.resolve(target);
      if (resolved !== undefined) return resolved;
    }
    return undefined;
  }
}

/** This node's own names: its SVC_HOST_NAME (any port) and its own TCP API address. */
export interface SelfIdentity {
  hostName: string;
  listenAddress: string;
  /** Bound TCP API port (known once listening). */
  tcpPort(): number;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);
const ANY = new Set(['0.0.0.0', '::']);

export function isSelfTarget(target: TargetAddress, self: SelfIdentity): boolean {
  if (target.host === self.hostName.toLowerCase()) return true;
  if (target.port !== self.tcpPort()) return false;
  const listen = self.listenAddress.toLowerCase();
  if (target.host === listen) return true;
  // Bound to loopback or to every address: the loopback names reach this listener too.
  return (LOOPBACK.has(listen) || ANY.has(listen)) && LOOPBACK.has(target.host);
}

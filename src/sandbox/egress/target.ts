// Where a request through the proxy asks to go: the authority of a CONNECT (`host:port`,
// `[v6]:port`) or the host of an absolute-form URL, checked and spelled one way (lower case, no
// trailing dot, IPv6 without brackets and compressed), or the one-line reason it is not a target.
import { isIP } from 'node:net';
import { isHostName } from '../../config/network-patterns.ts';
import { canonicalAddress } from './addresses.ts';
import type { EgressTarget } from './types.ts';

/** The host of a target, spelled one way; undefined when it is neither a host name nor an IP address. */
export function targetHost(text: string): string | undefined {
  let host = text.toLowerCase();
  if (host.startsWith('[') && host.endsWith(']')) {
    host = host.slice(1, -1);
    return isIP(host) === 6 && !host.includes('%') ? canonicalAddress(host) : undefined;
  }
  if (isIP(host) === 4) return host;
  if (host.endsWith('.')) host = host.slice(0, -1);
  return isHostName(host) ? host : undefined;
}

function port(text: string): number | undefined {
  if (!/^\d{1,5}$/.test(text)) return undefined;
  const value = Number(text);
  return value >= 1 && value <= 65535 ? value : undefined;
}

/** The target of `CONNECT host:port`. */
export function connectTarget(authority: string): EgressTarget | string {
  const match = /^(\[[^\]]*\]|[^:[\]]+):(\d+)$/.exec(authority);
  if (!match) return `CONNECT needs host:port (an IPv6 address in brackets), not "${authority.slice(0, 100)}"`;
  const host = targetHost(match[1] ?? '');
  if (host === undefined) return `"${match[1]?.slice(0, 100)}" is not a host name or an IP address`;
  const number = port(match[2] ?? '');
  if (number === undefined) return `the port must be 1 to 65535, not ${match[2]?.slice(0, 10)}`;
  return { host, port: number };
}

/** The target of an absolute-form request (`GET http://host:port/path`) and the path to ask it for. */
export function absoluteTarget(url: string): { target: EgressTarget; path: string } | string {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    return 'the proxy takes absolute-form requests (GET http://host/path) and CONNECT host:port; this request names no host';
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `"${url.slice(0, 100)}" is not a URL`;
  }
  if (parsed.protocol !== 'http:')
    return `the proxy forwards http:// URLs; for ${parsed.protocol.slice(0, 20)}// use CONNECT (an HTTPS proxy client does)`;
  const host = targetHost(parsed.hostname);
  if (host === undefined) return `"${parsed.hostname.slice(0, 100)}" is not a host name or an IP address`;
  return { target: { host, port: parsed.port === '' ? 80 : Number(parsed.port) }, path: `${parsed.pathname}${parsed.search}` };
}

/** `host:port` as a person reads it and sandbox.network.allow takes it (`[::1]:8080` for IPv6). */
export function targetText(target: EgressTarget): string {
  return `${target.host.includes(':') ? `[${target.host}]` : target.host}:${target.port}`;
}

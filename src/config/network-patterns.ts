// The hosts sandbox.network.allow may name: `host`, `host:port`, `*.domain`, `*.domain:port`, an
// IPv4 address, or an IPv6 address in brackets (`[::1]:8080`). Parsed once here, so that the
// settings, the proxy and the docs read the same rule.
import { isIPv6 } from 'node:net';

export interface NetworkPattern {
  /** Lower case, without the `*.` of a wildcard and without brackets. */
  host: string;
  /** `*.domain`: any name under the domain (never the domain itself, never an address). */
  wildcard: boolean;
  /** Absent: any port. */
  port?: number;
  /** The host is an IP address literal. */
  address: boolean;
}

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const IPV4 = /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const IPV6 = /^[0-9a-f:.]+$/;

/** Whether `name` is a DNS name (letters, digits, hyphens; dot-separated labels). */
export function isHostName(name: string): boolean {
  return name.length <= 253 && name.split('.').every((label) => LABEL.test(label)) && !/^\d+$/.test(name.split('.').at(-1) ?? '');
}

/** The pattern `text` stands for, or the problem with it (in words a settings page shows). */
export function parseNetworkPattern(text: string): NetworkPattern | string {
  const trimmed = text.trim().toLowerCase();
  if (trimmed === '' || trimmed === '*') return 'must name a host: "api.example.com", "api.example.com:443" or "*.example.com"';
  let host = trimmed;
  let port: number | undefined;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(trimmed);
  if (bracketed) {
    host = bracketed[1] ?? '';
    if (bracketed[2] !== undefined) port = Number(bracketed[2]);
    if (!IPV6.test(host) || !isIPv6(host)) return 'must be an IPv6 address in brackets, e.g. "[::1]:8080"';
  } else {
    const colon = trimmed.lastIndexOf(':');
    if (colon !== -1) {
      if (trimmed.indexOf(':') !== colon) return 'an IPv6 address goes in brackets, e.g. "[::1]:8080"';
      const portText = trimmed.slice(colon + 1);
      if (!/^\d{1,5}$/.test(portText)) return 'the port after ":" must be a number';
      port = Number(portText);
      host = trimmed.slice(0, colon);
    }
  }
  if (port !== undefined && (port < 1 || port > 65535)) return 'the port must be 1 to 65535';
  const wildcard = host.startsWith('*.');
  if (wildcard) host = host.slice(2);
  if (host.includes('*')) return 'a wildcard stands only at the start, as "*.example.com"';
  const address = IPV4.test(host) || (bracketed !== null && IPV6.test(host));
  if (wildcard && (address || !host.includes('.'))) return 'a wildcard needs a domain with a dot, as "*.example.com"';
  if (!address && !isHostName(host)) return 'must be a host name, an IPv4 address or a bracketed IPv6 address';
  return { host, wildcard, address, ...(port === undefined ? {} : { port }) };
}

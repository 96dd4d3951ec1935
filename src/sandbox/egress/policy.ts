// Whether a target may be reached, before its name is resolved (is it listed?) and after (is
// every address it resolved to one it may reach?). A loopback, private or other special address
// is reached only when the request names that address itself and sandbox.network.allow lists it
// exactly with its port: never through a wildcard, a pattern without a port, a session grant, or
// a name that resolves there.
import { isIP } from 'node:net';
import { parseNetworkPattern, type NetworkPattern } from '../../config/network-patterns.ts';
import type { SandboxConfig } from '../../config/schema.ts';
import { addressClass, canonicalAddress, type AddressClass } from './addresses.ts';
import type { EgressTarget } from './types.ts';

/** sandbox.network, as the proxy reads it at each request. */
export type NetworkConfig = SandboxConfig['network'];

/** How a target stands against the list: not listed, listed, or listed exactly as an address with its port. */
export type Listing = 'unlisted' | 'listed' | 'exact';

/** A refusal for an address the target may not reach: which address, and what kind it is. */
export interface SpecialAddress {
  address: string;
  kind: Exclude<AddressClass, 'public'>;
}

const parsedLists = new WeakMap<readonly string[], NetworkPattern[]>();

/** The patterns of sandbox.network.allow (parsed once per list; entries the schema would refuse are skipped). */
export function allowPatterns(allow: readonly string[]): NetworkPattern[] {
  let patterns = parsedLists.get(allow);
  if (!patterns) {
    patterns = allow.map(parseNetworkPattern).filter((pattern): pattern is NetworkPattern => typeof pattern !== 'string');
    parsedLists.set(allow, patterns);
  }
  return patterns;
}

/** The key of a session grant (an answer "session" or "always"): the target's host and port. */
export function grantKey(target: EgressTarget): string {
  return `${target.host}\n${target.port}`;
}

function patternHost(pattern: NetworkPattern): string {
  return pattern.address ? (canonicalAddress(pattern.host) ?? pattern.host) : pattern.host;
}

function hostMatches(pattern: NetworkPattern, target: EgressTarget, literal: boolean): boolean {
  if (pattern.wildcard) return !literal && target.host.endsWith(`.${pattern.host}`);
  return pattern.address === literal && patternHost(pattern) === target.host;
}

/**
 * How `target` stands against the patterns and the session's grants. "exact": its host is an
 * address a pattern lists with exactly its port (the only way to a special address).
 */
export function listing(target: EgressTarget, patterns: readonly NetworkPattern[], grants: Pick<ReadonlySet<string>, 'has'>): Listing {
  const literal = isIP(target.host) !== 0;
  let listed = grants.has(grantKey(target));
  for (const pattern of patterns) {
    if (!hostMatches(pattern, target, literal)) continue;
    if (pattern.port === target.port && literal) return 'exact';
    if (pattern.port === undefined || pattern.port === target.port) listed = true;
  }
  return listed ? 'listed' : 'unlisted';
}

/**
 * The first address of `addresses` the target may not reach, or undefined when it may reach
 * them all. Every address is checked, so that a name resolving to a public and a private
 * address is refused, whichever the connection would have tried first.
 */
export function forbiddenAddress(target: EgressTarget, addresses: readonly string[], standing: Listing): SpecialAddress | undefined {
  for (const address of addresses) {
    const kind = addressClass(address);
    if (kind === 'public') continue;
    const named = standing === 'exact' && canonicalAddress(address) === target.host;
    if (!named) return { address, kind };
  }
  return undefined;
}

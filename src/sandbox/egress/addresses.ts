// What kind of IP address the proxy is about to reach: public, or one of the special ones
// (loopback, private, link-local...) that sandboxed code reaches only when listed exactly. IPv6
// forms that carry an IPv4 address (mapped, compatible, NAT64, 6to4, Teredo) are judged by it,
// so that no IPv6 spelling of 127.0.0.1 passes for public.
import { isIPv4, isIPv6 } from 'node:net';

export type AddressClass = 'public' | 'loopback' | 'unspecified' | 'link-local' | 'private' | 'multicast' | 'reserved';

/** Words for each class, as a refusal says them ("127.0.0.1 is a loopback address"). */
export const ADDRESS_CLASS_WORDS: Record<AddressClass, string> = {
  public: 'a public address',
  loopback: 'a loopback address',
  unspecified: 'an unspecified address',
  'link-local': 'a link-local address',
  private: 'a private address',
  multicast: 'a multicast or broadcast address',
  reserved: 'a reserved address',
};

/** IPv4 ranges that are not public, as [first address, prefix length, class]; the first match wins. */
const V4_RANGES: readonly (readonly [string, number, AddressClass])[] = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'private'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.0.2.0', 24, 'reserved'],
  ['192.88.99.0', 24, 'reserved'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'reserved'],
  ['198.51.100.0', 24, 'reserved'],
  ['203.0.113.0', 24, 'reserved'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

function v4Number(address: string): number {
  return address.split('.').reduce((sum, part) => sum * 256 + Number(part), 0);
}

const V4_TABLE = V4_RANGES.map(([first, bits, kind]) => ({ first: v4Number(first), size: 2 ** (32 - bits), kind }));

function v4Class(value: number): AddressClass {
  return V4_TABLE.find((range) => value >= range.first && value < range.first + range.size)?.kind ?? 'public';
}

/** The eight 16-bit groups of an IPv6 address (without a zone), or undefined when it is not one. */
export function ipv6Groups(address: string): number[] | undefined {
  const text = address.toLowerCase();
  if (!isIPv6(text) || text.includes('%')) return undefined;
  let words = text;
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (tail.includes('.')) {
    const v4 = v4Number(tail);
    words = `${text.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const [head = '', rest] = words.split('::');
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((word) => parseInt(word, 16)));
  const front = parse(head);
  const back = rest === undefined ? [] : parse(rest);
  const groups = [...front, ...Array<number>(8 - front.length - back.length).fill(0), ...back];
  return groups.length === 8 ? groups : undefined;
}

const v4Of = (high: number, low: number) => high * 65536 + low;

/** The class of an IPv6 address, by its groups. */
function v6Class(g: readonly number[]): AddressClass {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  const zeroTo4 = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0;
  if (zeroTo4 && g5 === 0 && g6 === 0) return g7 === 0 ? 'unspecified' : g7 === 1 ? 'loopback' : v4Class(v4Of(g6, g7));
  // ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible), 64:ff9b::a.b.c.d (NAT64): the IPv4 inside.
  if (zeroTo4 && (g5 === 0xffff || g5 === 0)) return v4Class(v4Of(g6, g7));
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return v4Class(v4Of(g6, g7));
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 1) return 'private';
  // 6to4 (2002:AABB:CCDD::/48) carries its IPv4 in groups 1 and 2.
  if (g0 === 0x2002) return v4Class(v4Of(g1, g2));
  // Teredo (2001:0::/32): the server's IPv4 in groups 2 and 3, the client's inverted in 6 and 7.
  if (g0 === 0x2001 && g1 === 0) {
    const server = v4Class(v4Of(g2, g3));
    return server !== 'public' ? server : v4Class(v4Of(g6 ^ 0xffff, g7 ^ 0xffff));
  }
  if (g0 === 0x2001 && g1 === 0xdb8) return 'reserved';
  if (g0 >= 0xff00) return 'multicast';
  if ((g0 & 0xffc0) === 0xfe80) return 'link-local';
  if ((g0 & 0xffc0) === 0xfec0 || (g0 & 0xfe00) === 0xfc00) return 'private';
  // Outside 2000::/3 nothing is global unicast.
  if ((g0 & 0xe000) !== 0x2000) return 'reserved';
  return 'public';
}

/** The class of an IP address; anything that is not a plain IPv4 or IPv6 address counts as reserved. */
export function addressClass(address: string): AddressClass {
  if (isIPv4(address)) return v4Class(v4Number(address));
  const groups = ipv6Groups(address);
  return groups ? v6Class(groups) : 'reserved';
}

/** Whether sandboxed code may reach `address` only when it is listed exactly (loopback, private, ...). */
export function isSpecialAddress(address: string): boolean {
  return addressClass(address) !== 'public';
}

/** One spelling per address, so that `[::1]` and `[0:0::1]` compare equal: IPv4 as is, IPv6 compressed (RFC 5952). */
export function canonicalAddress(address: string): string | undefined {
  if (isIPv4(address)) return address;
  const groups = ipv6Groups(address);
  if (!groups) return undefined;
  // The longest run of two or more zero groups becomes "::" (the first, when runs tie).
  let best = { start: -1, length: 0 };
  for (let start = 0; start < 8;) {
    let end = start;
    while (end < 8 && groups[end] === 0) end++;
    if (end - start > best.length && end - start >= 2) best = { start, length: end - start };
    start = end === start ? start + 1 : end;
  }
  const hex = groups.map((group) => group.toString(16));
  if (best.start === -1) return hex.join(':');
  return `${hex.slice(0, best.start).join(':')}::${hex.slice(best.start + best.length).join(':')}`;
}

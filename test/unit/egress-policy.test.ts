// The rules of the sandbox's network, without a socket: the patterns of sandbox.network.allow,
// which addresses are special (in every IPv6 spelling of an IPv4 one), the targets a request may
// name, and the policy table (a wildcard never reaches a private address; a name that resolves
// there is refused even when listed; only an exact address with its port opens one).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseNetworkPattern, type NetworkPattern } from '../../src/config/network-patterns.ts';
import { addressClass, canonicalAddress, isSpecialAddress } from '../../src/sandbox/egress/addresses.ts';
import { allowPatterns, forbiddenAddress, grantKey, listing } from '../../src/sandbox/egress/policy.ts';
import { notListed, specialAddress } from '../../src/sandbox/egress/refusals.ts';
import { absoluteTarget, connectTarget, targetText } from '../../src/sandbox/egress/target.ts';
import type { EgressTarget } from '../../src/sandbox/egress/types.ts';

test('patterns: host, host:port, *.domain, IPv4, [IPv6]:port; problems said in words', () => {
  assert.deepEqual(parseNetworkPattern('API.Example.com'), { host: 'api.example.com', wildcard: false, address: false });
  assert.deepEqual(parseNetworkPattern('api.example.com:443'), { host: 'api.example.com', wildcard: false, address: false, port: 443 });
  assert.deepEqual(parseNetworkPattern('*.example.com'), { host: 'example.com', wildcard: true, address: false });
  assert.deepEqual(parseNetworkPattern('127.0.0.1:8080'), { host: '127.0.0.1', wildcard: false, address: true, port: 8080 });
  assert.deepEqual(parseNetworkPattern('[::1]:8080'), { host: '::1', wildcard: false, address: true, port: 8080 });
  for (const bad of [
    '',
    '*',
    '*.com',
    '*.10.0.0.1',
    'a.*.com',
    '::1',
    '[:::::]',
    '[zz::1]',
    'host:0',
    'host:99999',
    'host:x',
    'a_b.com',
    '1.2.3',
  ]) {
    assert.equal(typeof parseNetworkPattern(bad), 'string', bad);
  }
});

test('address classes: loopback, unspecified, link-local, private, multicast, reserved, public', () => {
  const table: [string, string][] = [
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['::', 'unspecified'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1', 'link-local'],
    ['febf::1', 'link-local'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['8.8.8.8', 'public'],
    ['172.32.0.1', 'public'],
    ['100.128.0.1', 'public'],
    ['93.184.216.34', 'public'],
    ['2606:4700::1111', 'public'],
    ['not an address', 'reserved'],
  ];
  for (const [address, kind] of table) assert.equal(addressClass(address), kind, address);
});

test('IPv6 forms that carry an IPv4 address are judged by it: mapped, compatible, NAT64, 6to4, Teredo', () => {
  for (const address of [
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::127.0.0.1',
    '64:ff9b::10.0.0.1',
    '64:ff9b::a9fe:a9fe',
    '2002:7f00:1::1',
    '2002:c0a8:101::',
  ]) {
    assert.ok(isSpecialAddress(address), address);
  }
  assert.equal(addressClass('::ffff:169.254.169.254'), 'link-local');
  assert.equal(addressClass('::ffff:8.8.8.8'), 'public');
  assert.equal(addressClass('64:ff9b::8.8.8.8'), 'public');
  assert.equal(addressClass('2002:808:808::1'), 'public');
  // Teredo: the client's address is stored inverted (127.0.0.1 -> 80ff:fffe).
  assert.equal(addressClass('2001:0:4136:e378:8000:63bf:80ff:fffe'), 'loopback');
  assert.equal(addressClass('2001:0:4136:e378:8000:63bf:f7f7:f7f7'), 'public');
  assert.equal(addressClass('2001:0:a00:1::1'), 'private');
  assert.equal(canonicalAddress('0:0:0:0:0:0:0:1'), '::1');
  assert.equal(canonicalAddress('2001:DB8:0:0:1:0:0:1'), '2001:db8::1:0:0:1');
  assert.equal(canonicalAddress('::ffff:127.0.0.1'), '::ffff:7f00:1');
});

test('targets: CONNECT authorities and absolute URLs, spelled one way; anything else is a reason', () => {
  assert.deepEqual(connectTarget('API.example.com.:443'), { host: 'api.example.com', port: 443 });
  assert.deepEqual(connectTarget('[0:0::1]:8080'), { host: '::1', port: 8080 });
  assert.deepEqual(connectTarget('127.0.0.1:80'), { host: '127.0.0.1', port: 80 });
  for (const bad of ['example.com', 'example.com:0', 'example.com:70000', '::1:80', '[fe80::1%25eth0]:80', 'a b:80', '1.2.3:80', '']) {
    assert.equal(typeof connectTarget(bad), 'string', bad);
  }
  assert.deepEqual(absoluteTarget('http://Example.com/a?b=1'), { target: { host: 'example.com', port: 80 }, path: '/a?b=1' });
  assert.deepEqual(absoluteTarget('http://[::1]:8080/'), { target: { host: '::1', port: 8080 }, path: '/' });
  assert.match(String(absoluteTarget('/path')), /absolute-form/);
  assert.match(String(absoluteTarget('https://example.com/')), /CONNECT/);
  assert.equal(targetText({ host: '::1', port: 8080 }), '[::1]:8080');
});

const patterns = (...list: string[]) => allowPatterns(list);
const at = (host: string, port: number): EgressTarget => ({ host, port });
const none = new Set<string>();

/** The decision for `target` resolving to `addresses`: what the proxy would do, in one word. */
function decide(target: EgressTarget, allowed: readonly NetworkPattern[], addresses: string[], grants = none): string {
  const standing = listing(target, allowed, grants);
  if (standing === 'unlisted') return 'unlisted';
  return forbiddenAddress(target, addresses, standing) ? 'private' : 'allowed';
}

test('policy: names, wildcards and ports', () => {
  const list = patterns('api.example.com:443', '*.example.org', 'plain.example.net');
  const pub = ['93.184.216.34'];
  assert.equal(decide(at('api.example.com', 443), list, pub), 'allowed');
  assert.equal(decide(at('api.example.com', 80), list, pub), 'unlisted');
  assert.equal(decide(at('a.example.org', 1234), list, pub), 'allowed');
  assert.equal(decide(at('a.b.example.org', 443), list, pub), 'allowed');
  assert.equal(decide(at('example.org', 443), list, pub), 'unlisted');
  assert.equal(decide(at('evilexample.org', 443), list, pub), 'unlisted');
  assert.equal(decide(at('plain.example.net', 8443), list, pub), 'allowed');
  assert.equal(decide(at('x.plain.example.net', 443), list, pub), 'unlisted');
});

test('policy: special addresses only by an exact address with its port, never by a name or a wildcard', () => {
  const list = patterns('*.example.com', 'internal.example.net', '127.0.0.1:8080', '[::1]:9090', '127.0.0.2', '10.0.0.5:443');
  // A wildcard never reaches a private address, nor does a listed name that resolves to one.
  assert.equal(decide(at('a.example.com', 443), list, ['10.1.2.3']), 'private');
  assert.equal(decide(at('internal.example.net', 443), list, ['10.0.0.5']), 'private');
  // One special address among public ones refuses the name (every address is checked).
  assert.equal(decide(at('a.example.com', 443), list, ['93.184.216.34', '127.0.0.1']), 'private');
  assert.equal(decide(at('a.example.com', 443), list, ['::ffff:10.0.0.1']), 'private');
  // Exactly listed addresses with their port.
  assert.equal(decide(at('127.0.0.1', 8080), list, ['127.0.0.1']), 'allowed');
  assert.equal(decide(at('::1', 9090), list, ['::1']), 'allowed');
  assert.equal(decide(at('10.0.0.5', 443), list, ['10.0.0.5']), 'allowed');
  // Another port, a pattern without a port, another spelling of the address: no.
  assert.equal(decide(at('127.0.0.1', 8081), list, ['127.0.0.1']), 'unlisted');
  assert.equal(decide(at('127.0.0.2', 8080), list, ['127.0.0.2']), 'private');
  assert.equal(decide(at('::ffff:7f00:1', 8080), list, ['::ffff:7f00:1']), 'unlisted');
  // A name that resolves to an exactly listed address is still a name.
  assert.equal(decide(at('localhost', 8080), patterns('localhost:8080', '127.0.0.1:8080'), ['127.0.0.1']), 'private');
});

test('policy: a session grant is an exact host:port of a public host', () => {
  const grants = new Set([grantKey(at('api.example.com', 443)), grantKey(at('127.0.0.1', 8080))]);
  assert.equal(decide(at('api.example.com', 443), [], ['93.184.216.34'], grants), 'allowed');
  assert.equal(decide(at('api.example.com', 80), [], ['93.184.216.34'], grants), 'unlisted');
  assert.equal(decide(at('api.example.com', 443), [], ['192.168.0.9'], grants), 'private');
  assert.equal(decide(at('127.0.0.1', 8080), [], ['127.0.0.1'], grants), 'private');
});

test('refusals name the setting to change and, for special addresses, the rule', () => {
  assert.equal(
    notListed(at('api.example.com', 443)).reason,
    'Code Execution Mode refused api.example.com:443: not in sandbox.network.allow. Add "api.example.com:443" (or "*.example.com") to sandbox.network.allow, or set sandbox.network.ask to ask each time.',
  );
  assert.doesNotMatch(notListed(at('example.com', 443)).reason, /\*\.com/);
  const literal = specialAddress(at('127.0.0.1', 8080), { address: '127.0.0.1', kind: 'loopback' });
  assert.match(
    literal.reason,
    /127\.0\.0\.1 is a loopback address, reached only when sandbox\.network\.allow lists it exactly with its port, as "127\.0\.0\.1:8080"/,
  );
  const named = specialAddress(at('db.example.com', 5432), { address: '10.0.0.5', kind: 'private' });
  assert.match(named.reason, /resolves to 10\.0\.0\.5, a private address.*never through a name/);
  assert.equal(named.status, 403);
  assert.equal(named.decision, 'private');
});

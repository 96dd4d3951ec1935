// A failed pull's last line, as podman and Docker print it, is told with its likely cause and fix.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pullFailureHint } from '../../src/sandbox/image/pull-failure.ts';

test('a failed pull names its likely cause and the fix', () => {
  const cases: Array<[string, RegExp]> = [
    [
      'Error: initializing source docker://python:3.14-slim: pinging container registry registry-1.docker.io: Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io: no such host',
      /could not be reached.*HTTPS_PROXY/,
    ],
    ['Error response from daemon: Get "https://localhost/v2/": dial tcp [::1]:443: connect: connection refused', /could not be reached/],
    ['Error: ... proxyconnect tcp: dial tcp 10.0.0.1:3128: connect: connection refused', /a proxy refused.*NO_PROXY/],
    [
      'Error: ... tls: failed to verify certificate: x509: certificate signed by unknown authority',
      /certificate is not trusted.*CA certificate/,
    ],
    [
      'Error: initializing source docker://ghcr.io/acme/private:1: reading manifest 1 in ghcr.io/acme/private: unauthorized',
      /wants a sign-in.*login/,
    ],
    ['Error: ... reading manifest 3.99 in docker.io/library/python: manifest unknown', /no such image or tag.*sandbox\.image/],
    ['Error: writing blob: ... write /var/lib/containers/x: no space left on device', /disk is full/],
  ];
  for (const [said, expected] of cases) assert.match(pullFailureHint(said), expected, said);
  assert.equal(pullFailureHint('exit code 125'), '', 'nothing known: nothing added');
});

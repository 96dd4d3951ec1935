import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  dockerIsolation,
  hostIdOf,
  podmanUsernsUnavailable,
  rootlessIsolation,
  subordinateIds,
  usernsStartHint,
  USERNS_FAILURE,
} from '../../src/sandbox/engines/isolation.ts';

/** A rootless user's mapping as `podman info` reports it: its own uid, then its subordinate range. */
const rootless = (size: number) => [
  { container_id: 0, host_id: 1000, size: 1 },
  { container_id: 1, host_id: 100000, size },
];

test('rootless podman: a namespace per sandbox only when the subordinate ids hold every sandbox that may run', () => {
  assert.equal(subordinateIds(rootless(65536)), 65536);
  assert.equal(hostIdOf(65534, rootless(65536)), 165533);
  // The usual 65536 ids hold one sandbox: a second session would not start, so they share a uid.
  const shared = rootlessIsolation(rootless(65536), rootless(65536), 5);
  assert.equal(shared?.ownUserNamespace, false);
  assert.match(
    shared?.detail ?? '',
    /^sandboxes share one host uid \(165533\): your 65536 subordinate ids hold 1 sandbox namespace\(s\) of 65536 ids, fewer than the 5/,
  );
  assert.match(shared?.problem ?? '', /at least 327680 subordinate ids: .*usermod --add-subuids .*podman system migrate/);
  assert.ok(shared?.fix?.url);
  assert.equal(rootlessIsolation(rootless(1_000_000), rootless(1_000_000), 5), undefined, '15 fit');
  assert.ok(rootlessIsolation(rootless(1_000_000), rootless(65536), 5), 'the smaller of uids and gids counts');
  assert.ok(rootlessIsolation([{ container_id: 0, host_id: 1000, size: 1 }], [], 1), 'no subordinate ids at all');
});

test('podman without ids for --userns=auto: shared uid, with the fix for rootful and for rootless', () => {
  const stderr =
    'level=error msg="Cannot find mappings for user \\"containers\\": no subuid ranges found for user \\"containers\\" in /etc/subuid"\nError: creating container storage: could not find enough available IDs';
  assert.match(stderr, USERNS_FAILURE);
  assert.doesNotMatch('Error: setting rlimit type 7: operation not permitted', USERNS_FAILURE);
  const rootful = podmanUsernsUnavailable(false, stderr);
  assert.equal(rootful.ownUserNamespace, false);
  assert.match(
    rootful.detail,
    /^sandboxes share uid 65534 on the host: podman cannot give each its own user namespace \(.*could not find enough available IDs\)$/,
  );
  assert.equal(rootful.fix?.command, 'echo containers:2147483647:2147483648 | sudo tee -a /etc/subuid /etc/subgid');
  assert.match(podmanUsernsUnavailable(true, stderr).problem ?? '', /usermod --add-subuids/);
  assert.match(usernsStartHint(stderr) ?? '', /ids for them are used up/);
  assert.equal(usernsStartHint('Error: no such image'), undefined);
});

test('docker: sandboxes share a host uid, with or without userns-remap, and the fix is podman', () => {
  const plain = dockerIsolation(['name=seccomp,profile=default']);
  assert.equal(plain.ownUserNamespace, false);
  assert.match(plain.detail, /^sandboxes share uid 65534 on the host: Docker runs containers in the host's user namespace/);
  assert.equal(plain.fix?.setting, 'sandbox.runtime');
  const remapped = dockerIsolation(['name=seccomp,profile=default', 'name=userns']);
  assert.match(remapped.detail, /userns-remap maps every container to the same ids/);
  assert.match(dockerIsolation(['name=rootless']).detail, /rootless Docker maps every container/);
});

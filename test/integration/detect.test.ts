// Runtime detection against the real CLIs, including rootless Podman on this host's cgroups v1,
// which silently ignores resource limits and must be reported as such.
import assert from 'node:assert/strict';
import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { probeRuntime, selectRuntime } from '../../src/sandbox/runtime/detect.ts';
import { testRuntimes } from '../helpers/env.ts';

for (const runtime of testRuntimes()) {
  test(`${runtime} is detected as ready, with its version`, async () => {
    const status = await probeRuntime(runtime);
    assert.equal(status.state, 'ready', status.problems.join(' '));
    assert.match(status.version ?? '', /^\d+\.\d+/);
    assert.equal(status.rootless, false);
  });
}

test('a pinned runtime that is not installed is not replaced by another', async () => {
  await assert.rejects(
    selectRuntime({ runtime: 'docker', runtimeOrder: ['podman', 'docker'] }, { commands: { docker: '/nonexistent/docker' } }),
    /tried docker\):\n- docker: docker is not installed/,
  );
});

test('auto falls through to the next runtime in order', async () => {
  const chosen = await selectRuntime(
    { runtime: 'auto', runtimeOrder: ['docker', 'podman'] },
    { commands: { docker: '/nonexistent/docker' } },
  );
  assert.equal(chosen.name, 'podman');
});

test('rootless Podman on cgroups v1 is reported as not enforcing limits', { skip: process.getuid?.() !== 0 && 'needs root to switch user' }, async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-rootless-'));
  const wrapper = join(dir, 'podman');
  await writeFile(
    wrapper,
    [
      '#!/bin/sh',
      'exec runuser -u cemrootless -- env HOME=/home/cemrootless XDG_RUNTIME_DIR=/tmp/cemrootless-run \\',
      `  CONTAINERS_CONF="${process.env.CONTAINERS_CONF ?? ''}" sh -c 'mkdir -p "$XDG_RUNTIME_DIR" && exec podman "$@"' podman "$@"`,
      '',
    ].join('\n'),
  );
  await chmod(wrapper, 0o755);
  const status = await probeRuntime('podman', { commands: { podman: wrapper } });
  assert.equal(status.rootless, true);
  assert.equal(status.cgroupVersion, 'v1');
  assert.equal(status.state, 'limits-not-enforced');
  assert.match(status.problems.join(' '), /ignores memory, CPU and process limits/);
});

test('a daemon that does not answer is reported as down', async () => {
  process.env.DOCKER_HOST = 'unix:///nonexistent/docker.sock';
  try {
    const down = await probeRuntime('docker');
    assert.equal(down.state, 'daemon-down');
    assert.match(down.problems.join(' '), /The Docker daemon does not answer/);
  } finally {
    delete process.env.DOCKER_HOST;
  }
});

// Runtime detection against the real CLIs, including rootless Podman on this host's cgroups v1,
// which silently ignores resource limits and must be reported as such.
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { defaultSandboxConfig, type RuntimeName } from '../../src/config/schema.ts';
import { checkRuntime, probeRuntime, selectRuntime, type CheckName } from '../../src/sandbox/engines/detect.ts';
import { locateRuntime } from '../../src/sandbox/engines/locate.ts';
import { SessionManager } from '../../src/sandbox/sessions/manager.ts';
import { TEST_IMAGE, testRuntimes, testSandbox } from '../helpers/env.ts';
import { writeScript } from '../helpers/script-file.ts';

for (const runtime of testRuntimes()) {
  test(`${runtime} is detected as ready, with its version`, async () => {
    const status = await probeRuntime(runtime);
    assert.equal(status.state, 'ready', status.problems.join(' '));
    assert.match(status.version ?? '', /^\d+\.\d+/);
    // This machine's engines run containers on its own kernel: sandbox.network reaches them.
    assert.equal(status.vm, undefined);
    // Podman runs as the calling user, so it is rootless exactly when that user is not root;
    // Docker's answer is its daemon's, which the test cannot know in advance.
    if (runtime === 'podman') assert.equal(status.rootless, process.getuid?.() !== 0);
    else assert.equal(typeof status.rootless, 'boolean');
  });
}

test('a pinned runtime that is not installed is not replaced by another', async () => {
  await assert.rejects(
    selectRuntime(defaultSandboxConfig({ runtime: 'docker', runtimeOrder: ['podman', 'docker'], image: TEST_IMAGE }), {
      commands: { docker: '/nonexistent/docker' },
    }),
    /tried docker\):\n- docker: docker is not installed/,
  );
});

test('auto falls through to the next runtime in order', async () => {
  const chosen = await selectRuntime(defaultSandboxConfig({ runtime: 'auto', runtimeOrder: ['docker', 'podman'], image: TEST_IMAGE }), {
    commands: { docker: '/nonexistent/docker' },
  });
  assert.equal(chosen.name, 'podman');
});

test(
  'rootless Podman on cgroups v1 is reported as not enforcing limits',
  { skip: process.getuid?.() !== 0 && 'needs root to switch user' },
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cem-rootless-'));
    const wrapper = writeScript(dir, 'podman', [
      'exec runuser -u cemrootless -- env HOME=/home/cemrootless XDG_RUNTIME_DIR=/tmp/cemrootless-run \\',
      `  CONTAINERS_CONF="${process.env.CONTAINERS_CONF ?? ''}" sh -c 'mkdir -p "$XDG_RUNTIME_DIR" && exec podman "$@"' podman "$@"`,
    ]);
    const status = await probeRuntime('podman', { commands: { podman: wrapper } });
    assert.equal(status.rootless, true);
    assert.equal(status.cgroupVersion, 'v1');
    assert.equal(status.state, 'limits-not-enforced');
    assert.match(status.problems.join(' '), /ignores memory, CPU and process limits/);
  },
);

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

/** A containers.conf like the one in use, with Podman's init binary pointed at a missing file. */
async function confWithoutInit(): Promise<string> {
  const base = process.env.CONTAINERS_CONF ? await readFile(process.env.CONTAINERS_CONF, 'utf8') : '';
  const line = 'init_path = "/nonexistent/catatonit"';
  const text = base.includes('[containers]') ? base.replace('[containers]', `[containers]\n${line}`) : `[containers]\n${line}\n${base}`;
  const file = join(await mkdtemp(join(tmpdir(), 'cem-noinit-')), 'containers.conf');
  await writeFile(file, text);
  return file;
}

/**
 * Every check of a real sandbox start, in order, passed: Podman runs each sandbox in its own user
 * namespace here; Docker cannot (sandbox-isolation.test.ts).
 */
function passedChecks(runtime: RuntimeName): [CheckName, boolean][] {
  return [
    ['installed', true],
    ['engine', true],
    ['daemon', true],
    ['limits', true],
    ['image', true],
    ['start', true],
    ['isolation', runtime === 'podman'],
  ];
}

for (const runtime of testRuntimes()) {
  test(`${runtime}: every check of a real sandbox start passes, with the image's Python`, async () => {
    const status = await checkRuntime(runtime, testSandbox(runtime));
    assert.equal(status.state, 'ready', status.problems.join(' '));
    assert.deepEqual(
      status.checks.map((c) => [c.name, c.ok]),
      passedChecks(runtime),
    );
    assert.match(status.python ?? '', /^3\.\d+$/);
  });

  test(`${runtime}: a bridge's first sandbox proves the hardened start and serves the first run`, async () => {
    const sandbox = new SessionManager(testSandbox(runtime, { prewarm: false }));
    try {
      const engine = await sandbox.check();
      assert.equal(engine.kind, 'container');
      const status = engine.runtime;
      assert.deepEqual(
        status.checks.map((c) => [c.name, c.ok]),
        passedChecks(runtime),
      );
      assert.match(status.python ?? '', /^3\.\d+$/);
      // The container that proved the start runs the first code: no container start is waited for.
      const result = await sandbox.execute('print(1)');
      assert.equal(result.stdout, '1\n');
      assert.equal(result.coldStart, false);
    } finally {
      await sandbox.close();
    }
  });

  test(`${runtime}: a missing image is its own finding, with a pull as the fix`, async () => {
    const sandbox = testSandbox(runtime, { image: 'localhost/cem-missing:none' });
    const status = await checkRuntime(runtime, sandbox);
    assert.equal(status.state, 'image-missing');
    assert.deepEqual(status.checks.find((c) => c.name === 'image')?.ok, false);
    assert.equal(
      status.checks.some((c) => c.name === 'start'),
      false,
      'no start is tried without the image',
    );
    assert.deepEqual(
      status.fixes.map((f) => f.kind),
      ['pull'],
    );
    await assert.rejects(selectRuntime(sandbox, {}, 'run the pull command'), (error: Error) => {
      assert.equal(error.name, 'ImageMissingError');
      assert.match(error.message, /localhost\/cem-missing:none" is not present in .*run the pull command/);
      return true;
    });
  });
}

test('no init binary is needed: podman with its init binary pointed at a missing file still runs sandboxes', async () => {
  const env = { ...process.env, CONTAINERS_CONF: await confWithoutInit() };
  const status = await checkRuntime('podman', testSandbox('podman'), { env });
  assert.equal(status.state, 'ready', status.problems.join(' '));
  const chosen = await selectRuntime(testSandbox('podman', { runtime: 'auto', runtimeOrder: ['podman', 'docker'] }), { env });
  assert.equal(chosen.name, 'podman');
});

test('a runtime not on PATH is found in an install folder, or at its configured path, else reported absent', async () => {
  const real = locateRuntime('podman');
  assert.equal(real.found, 'path');
  const installDir = await mkdtemp(join(tmpdir(), 'cem-install-'));
  await symlink(real.command, join(installDir, 'podman'));
  const savedPath = process.env.PATH;
  process.env.PATH = '/nonexistent';
  try {
    const absent = await probeRuntime('podman', { searchDirs: [] });
    assert.equal(absent.state, 'not-installed');
    assert.match(absent.problems.join(' '), /not installed \(no `podman` on PATH or in the usual install folders\)/);
    assert.deepEqual(
      absent.fixes.map((f) => f.setting ?? f.url),
      ['https://podman.io/docs/installation', 'sandbox.podmanPath'],
    );
    const found = await probeRuntime('podman', { searchDirs: ['/nonexistent-too', installDir] });
    assert.equal(found.command, join(installDir, 'podman'));
    assert.equal(found.state, 'ready', found.problems.join(' '));
    const configured = await probeRuntime('podman', { searchDirs: [] }, { podmanPath: real.command });
    assert.equal(configured.command, real.command);
    assert.equal(configured.state, 'ready');
    const wrongPath = await probeRuntime('podman', { searchDirs: [] }, { podmanPath: '/nonexistent/podman' });
    assert.match(wrongPath.problems.join(' '), /at the configured path \/nonexistent\/podman/);
  } finally {
    process.env.PATH = savedPath;
  }
});

for (const runtime of testRuntimes()) {
  test(`${runtime}: the sandbox check mounts the workspace and refuses a bad one`, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cem-detect-ws-'));
    await chmod(dir, 0o755);
    const mounted = await checkRuntime(runtime, testSandbox(runtime, { workspace: { path: dir, access: 'read-only' } }));
    assert.equal(mounted.state, 'ready', JSON.stringify(mounted.checks));
    assert.equal(mounted.checks.find((c) => c.name === 'workspace')?.ok, true);
    const missing = await checkRuntime(runtime, testSandbox(runtime, { workspace: { path: join(dir, 'gone'), access: 'read-only' } }));
    assert.equal(missing.checks.find((c) => c.name === 'workspace')?.ok, false);
    assert.match(missing.problems.join('\n'), /does not exist/);
    const plain = await checkRuntime(runtime, testSandbox(runtime));
    assert.equal(
      plain.checks.find((c) => c.name === 'workspace'),
      undefined,
      'no workspace check unless asked for',
    );
  });
}

// The kept answer of a local podman's `info`: the runtime check reads it back only when allowed
// (a bridge's first start, the status bar while all is well), only for a local podman, only
// while podman's binary, configuration files and ID ranges are as they were, for at most
// CACHE_MS, and only from a private folder. A faked podman CLI counts how often it is asked.
import assert from 'node:assert/strict';
import { appendFileSync, chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { writeScript } from '../helpers/script-file.ts';
import { defaultSandboxConfig } from '../../src/config/schema.ts';
import { PROBE_MARKER } from '../../src/sandbox/engines/commands.ts';
import { checkSandbox, checkSandboxKept, probeRuntime } from '../../src/sandbox/engines/detect.ts';
import { CACHE_MS, keepPodmanInfo, keptPodmanInfo, podmanInfoKey } from '../../src/sandbox/engines/podman-info-cache.ts';

const FIXTURE = new URL('../fixtures/engine-info/podman-linux.json', import.meta.url);

/** A faked podman in `dir` that answers version, info, connection list, image and run, and logs what it is asked. */
function fakePodman(
  dir: string,
  connections = '[]',
): {
  cli: string;
  /** How often it was asked for `info`, or for the given subcommand ("version", "system" for the connection list). */
  asked: (what?: string) => number;
  failInfo: (fail: boolean) => void;
  failStart: (fail: boolean) => void;
  noImage: (gone: boolean) => void;
} {
  const info = (JSON.parse(readFileSync(FIXTURE, 'utf8')) as { info: unknown }).info;
  writeFileSync(join(dir, 'info.json'), JSON.stringify(info));
  writeFileSync(join(dir, 'connections.json'), connections);
  const log = join(dir, 'asked.log');
  writeFileSync(log, '');
  const cli = writeScript(dir, 'podman', [
    `[ "$1" = --connection ] && shift 2`,
    `echo "$1" >> '${log}'`,
    `case "$1" in`,
    `  version) echo '{"Client":{"Version":"4.9.0"}}' ;;`,
    `  info) [ -e '${join(dir, 'fail')}' ] && exit 125; cat '${join(dir, 'info.json')}' ;;`,
    `  system) cat '${join(dir, 'connections.json')}' ;;`,
    `  image) [ -e '${join(dir, 'no-image')}' ] && { echo 'Error: no such image' >&2; exit 125; }; echo sha256:0123456789abcdef ;;`,
    `  run) [ -e '${join(dir, 'fail-start')}' ] && { echo 'Error: the start failed' >&2; exit 126; }; echo '${PROBE_MARKER} 3 11' ;;`,
    '  *) exit 1 ;;',
    'esac',
  ]);
  return {
    cli,
    asked: (what = 'info') =>
      readFileSync(log, 'utf8')
        .split('\n')
        .filter((line) => line === what).length,
    failInfo: (fail) => (fail ? writeFileSync(join(dir, 'fail'), '') : rmSync(join(dir, 'fail'), { force: true })),
    failStart: (fail) => (fail ? writeFileSync(join(dir, 'fail-start'), '') : rmSync(join(dir, 'fail-start'), { force: true })),
    noImage: (gone) => (gone ? writeFileSync(join(dir, 'no-image'), '') : rmSync(join(dir, 'no-image'), { force: true })),
  };
}

function setup(t: { after(fn: () => void): void }, connections?: string) {
  const dir = mkdtempSync(join(tmpdir(), 'cem-info-cache-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const conf = join(dir, 'containers.conf');
  writeFileSync(conf, '[engine]\n');
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '', HOME: dir, CEM_CACHE_DIR: join(dir, 'cache'), CONTAINERS_CONF: conf };
  const podman = fakePodman(dir, connections);
  const check = (cachedInfo: boolean, extra: NodeJS.ProcessEnv = {}) =>
    probeRuntime('podman', { commands: { podman: podman.cli }, env: { ...env, ...extra }, cachedInfo });
  return { dir, conf, env, podman, check };
}

test(
  'a bridge start reads the answer kept by the check before it; other checks ask podman and keep theirs',
  { skip: process.platform !== 'linux' && 'Linux only' },
  async (t) => {
    const { podman, check } = setup(t);
    const first = await check(true);
    assert.equal(first.state, 'ready', JSON.stringify(first.checks));
    assert.equal(podman.asked(), 1, 'nothing kept yet: podman is asked');
    const second = await check(true);
    assert.equal(podman.asked(), 1, 'the kept answer');
    assert.deepEqual(
      [second.state, second.rootless, second.cgroupVersion, second.defaultOciRuntime],
      [first.state, first.rootless, first.cgroupVersion, first.defaultOciRuntime],
    );
    await check(false);
    assert.equal(podman.asked(), 2, 'a check that may not use it (doctor, the status bar) asks podman');
    await check(true);
    assert.equal(podman.asked(), 2);
  },
);

test(
  'with the kept answer, neither the version nor the connection list is asked; a connection the settings pick reads nothing kept',
  { skip: process.platform !== 'linux' && 'Linux only' },
  async (t) => {
    const local = JSON.stringify([{ Name: 'here', URI: 'unix:///run/podman/podman.sock', Default: false, IsMachine: false }]);
    const { env, podman, check } = setup(t, local);
    const first = await check(true);
    assert.deepEqual([podman.asked('info'), podman.asked('version'), podman.asked('system')], [1, 1, 1], 'nothing kept yet');
    const second = await check(true);
    assert.deepEqual([podman.asked('info'), podman.asked('version'), podman.asked('system')], [1, 1, 1], 'all three from the kept answer');
    assert.equal(second.state, 'ready', JSON.stringify(second.checks));
    assert.deepEqual(second.endpoint, { runtime: 'podman', source: 'built-in default', remote: false });
    assert.deepEqual(
      [second.version, second.rootless, second.cgroupVersion, second.defaultOciRuntime],
      [first.version, first.rootless, first.cgroupVersion, first.defaultOciRuntime],
    );
    assert.match(second.checks.find((c) => c.name === 'installed')?.detail ?? '', /\(client 4\.3\.1\)/, "the kept answer's version");
    const picked = await probeRuntime('podman', { commands: { podman: podman.cli }, env, cachedInfo: true }, { podmanConnection: 'here' });
    assert.equal(picked.endpoint?.name, 'here');
    assert.deepEqual([podman.asked('info'), podman.asked('version'), podman.asked('system')], [2, 2, 2], 'a picked connection: all asked');
  },
);

test(
  "the status bar's check reads the kept answer while the sandbox is ready; one that is not (but for its image) asks podman; Diagnose and doctor always ask",
  { skip: process.platform !== 'linux' && 'Linux only' },
  async (t) => {
    const { env, podman } = setup(t);
    const sandbox = defaultSandboxConfig({ backend: 'container', runtime: 'podman', image: 'localhost/img:1' });
    const options = { commands: { podman: podman.cli }, env };
    const first = await checkSandboxKept(sandbox, options);
    assert.equal(first.chosen?.state, 'ready', JSON.stringify(first.runtimes.map((s) => s.checks)));
    assert.equal(podman.asked(), 1, 'nothing kept yet: podman is asked');
    const again = await checkSandboxKept(sandbox, options);
    assert.equal(again.chosen?.state, 'ready');
    assert.equal(podman.asked(), 1, 'the kept answer, its start proven by the check');
    await checkSandbox(sandbox, { ...options, all: true });
    assert.equal(podman.asked(), 2, "Diagnose's and doctor's check asks podman");
    podman.failStart(true);
    const failing = await checkSandboxKept(sandbox, options);
    assert.equal(failing.chosen, undefined);
    assert.equal(failing.runtimes[0]?.state, 'start-failed');
    assert.equal(podman.asked(), 3, 'a runtime that is not ready is checked again with podman asked');
    podman.failStart(false);
    podman.noImage(true);
    const noImage = await checkSandboxKept(sandbox, options);
    assert.equal(noImage.runtimes[0]?.state, 'image-missing');
    assert.equal(podman.asked(), 3, "a missing image is not info's to say: not checked again");
  },
);

test(
  'a change of configuration, another engine or a failed answer: podman is asked again',
  { skip: process.platform !== 'linux' && 'Linux only' },
  async (t) => {
    const { conf, podman, check } = setup(t);
    await check(true);
    writeFileSync(conf, '[engine]\nruntime = "crun"\n');
    await check(true);
    assert.equal(podman.asked(), 2, 'containers.conf changed');
    await check(true, { CONTAINER_HOST: 'unix:///run/other.sock' });
    await check(true, { CONTAINER_HOST: 'unix:///run/other.sock' });
    assert.equal(podman.asked(), 4, 'CONTAINER_HOST: never kept nor read');
    podman.failInfo(true);
    const down = await check(false);
    assert.equal(down.state, 'daemon-down');
    podman.failInfo(false);
    await check(true);
    assert.equal(podman.asked(), 6, 'a failed answer forgets the kept one');
  },
);

test("a podman machine's answer is not kept", { skip: process.platform !== 'linux' && 'Linux only' }, async (t) => {
  const machine = JSON.stringify([
    { Name: 'podman-machine-default', URI: 'ssh://core@127.0.0.1:50123/run/user/1000/podman/podman.sock', Default: true, IsMachine: true },
  ]);
  const { podman, check } = setup(t, machine);
  await check(true);
  await check(true);
  assert.equal(podman.asked(), 2);
});

test('the kept answer: its key, its age, its folder', { skip: process.platform !== 'linux' && 'Linux only' }, (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cem-info-cache-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const env = { HOME: dir, CEM_CACHE_DIR: join(dir, 'cache') };
  const binary = join(dir, 'podman');
  writeFileSync(binary, '#!/bin/sh\n', { mode: 0o755 });
  const key = podmanInfoKey(binary, env);
  assert.ok(key);
  assert.equal(podmanInfoKey('podman', env), undefined, 'a name on PATH: which binary is not known');
  assert.equal(podmanInfoKey(binary, env, 'darwin'), undefined, 'a VM elsewhere');
  assert.equal(podmanInfoKey(binary, { ...env, CONTAINER_CONNECTION: 'x' }), undefined);
  appendFileSync(binary, '# upgraded\n');
  assert.notEqual(podmanInfoKey(binary, env), key, 'another binary');

  const now = Date.now();
  keepPodmanInfo('k', '{"host":{}}', env, now);
  assert.equal(keptPodmanInfo('k', env, now + 1000), '{"host":{}}');
  assert.equal(keptPodmanInfo('other', env, now + 1000), undefined);
  assert.equal(keptPodmanInfo('k', env, now + CACHE_MS + 1), undefined, 'too old');
  assert.equal(keptPodmanInfo('k', env, now - 60_000), undefined, 'kept in the future');
  writeFileSync(join(dir, 'cache', 'podman-info.json'), '{"key":"k","at":1,"stdout":5}');
  assert.equal(keptPodmanInfo('k', env, 2), undefined, 'not what is kept: ignored');
  keepPodmanInfo('k', '{"host":{}}', env, now);
  keepPodmanInfo('k', 'x'.repeat(1_000_001), env, now);
  assert.equal(keptPodmanInfo('k', env, now), '{"host":{}}', 'too big to keep: not kept');
  for (const garbled of ['not json', '[1]', 'null']) keepPodmanInfo('k', garbled, env, now);
  assert.equal(keptPodmanInfo('k', env, now), '{"host":{}}', 'an answer that does not read as an object: not kept');

  keepPodmanInfo('k', '{}', env, now);
  chmodSync(join(dir, 'cache'), 0o777);
  assert.equal(keptPodmanInfo('k', env, now), undefined, 'a folder others may write is not read');
  chmodSync(join(dir, 'cache'), 0o700);
  assert.equal(keptPodmanInfo('k', env, now), '{}');
});

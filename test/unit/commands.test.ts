import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultSandboxConfig, MAX_WORKSPACE_FOLDERS, sandboxConfigSchema, type SandboxConfig } from '../../src/config/schema.ts';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BOOTSTRAP, LABEL, runArgs } from '../../src/sandbox/engines/commands.ts';
import { checkDockerOciRuntime } from '../../src/sandbox/engines/oci-runtime.ts';
import { engineHardLimits, hostHardLimits, parseProcLimits, rlimitFailure, sandboxUlimits } from '../../src/sandbox/engines/ulimits.ts';
import { remoteRuntimeHost, resolveWorkspaceMounts, workspaceSpec } from '../../src/sandbox/engines/workspace.ts';

/** The one folder a configuration mounts (real path), if any. */
const resolveWorkspaceDir = (config: SandboxConfig, forbidden: string[] = []) => resolveWorkspaceMounts(config, forbidden)[0]?.dir;

function pairs(args: string[], flag: string): string[] {
  return args.flatMap((a, i) => (a === flag ? [args[i + 1]!] : []));
}

test('run arguments carry every hardening flag and the configured limits', () => {
  const config = defaultSandboxConfig({ image: 'img:1', memory: '300m', pids: 50, cpus: 1.5, tmpSize: '32m' });
  const args = runArgs('podman', config, { name: 'n1', owner: 'h/1', session: 's' });
  assert.equal(args[0], 'run');
  for (const flag of ['--rm', '-i', '--init=false', '--read-only']) assert.ok(args.includes(flag), flag);
  assert.ok(!args.includes('--init'), 'no init binary: the kernel is PID 1');
  assert.deepEqual(pairs(args, '--network'), ['none']);
  assert.deepEqual(pairs(args, '--cap-drop'), ['ALL']);
  assert.deepEqual(pairs(args, '--security-opt'), ['no-new-privileges']);
  assert.deepEqual(pairs(args, '--user'), ['65534:65534']);
  assert.deepEqual(pairs(args, '--memory'), ['300m']);
  assert.deepEqual(pairs(args, '--memory-swap'), ['300m']);
  assert.deepEqual(pairs(args, '--pids-limit'), ['50']);
  assert.deepEqual(pairs(args, '--cpus'), ['1.5']);
  assert.deepEqual(pairs(args, '--pull'), ['never']);
  assert.deepEqual(pairs(args, '--label'), [`${LABEL}=1`, `${LABEL}.owner=h/1`, `${LABEL}.session=s`]);
  assert.deepEqual(pairs(args, '--tmpfs'), [
    '/tmp:rw,noexec,nosuid,nodev,size=32m,mode=1777',
    '/work:rw,noexec,nosuid,nodev,size=32m,mode=1777',
  ]);
  const docker = runArgs('docker', config, { name: 'n1', owner: 'h/1', session: 's' });
  assert.deepEqual(pairs(docker, '--tmpfs'), [
    '/tmp:rw,noexec,nosuid,nodev,size=32m,uid=65534,gid=65534,mode=0700',
    '/work:rw,noexec,nosuid,nodev,size=32m,uid=65534,gid=65534,mode=0700',
  ]);
  assert.deepEqual(args.slice(-4), ['img:1', '-u', '-c', BOOTSTRAP]);
  for (const flag of ['-v', '--volume', '--mount', '--privileged', '--cap-add']) assert.ok(!args.includes(flag), flag);
});

test('extra run arguments come before every hardening flag, so none can override them', () => {
  const args = runArgs('docker', defaultSandboxConfig({ image: 'img:1', extraRunArgs: ['--ulimit', 'nofile=1024:1024'] }), {
    name: 'n',
    owner: 'o',
    session: 's',
  });
  assert.deepEqual(args.slice(0, 3), ['run', '--ulimit', 'nofile=1024:1024']);
});

test("both runtimes run the sandbox with no log driver: nothing it writes is kept in the engine's logs", () => {
  for (const runtime of ['podman', 'docker'] as const) {
    const args = runArgs(runtime, defaultSandboxConfig({ extraRunArgs: ['--ulimit', 'nofile=1024:1024'] }), {
      name: 'n',
      owner: 'o',
      session: 's',
    });
    const at = args.indexOf('--log-driver');
    assert.equal(args[at + 1], 'none', runtime);
    assert.equal(args.lastIndexOf('--log-driver'), at, `${runtime}: one log driver`);
    assert.ok(at > args.indexOf('nofile=1024:1024'), `${runtime}: after the extra run arguments`);
  }
});

test('podman gets no writable /run or /var/tmp and no host entries', () => {
  const podman = runArgs('podman', defaultSandboxConfig(), { name: 'n', owner: 'o', session: 's' });
  assert.ok(podman.includes('--read-only-tmpfs=false'));
  assert.ok(podman.includes('--no-hosts'));
  const docker = runArgs('docker', defaultSandboxConfig(), { name: 'n', owner: 'o', session: 's' });
  assert.ok(!docker.includes('--no-hosts'));
});

test('the workspace is mounted read-only, noexec, nosuid, nodev on both runtimes, and only when resolved', () => {
  const config = defaultSandboxConfig({ workspace: { path: '/srv/data', access: 'read-only' } });
  assert.ok(
    !runArgs('podman', config, { name: 'n', owner: 'o', session: 's' }).some((a) => a.includes('/workspace')),
    'not mounted unless the start resolved it',
  );
  const podman = runArgs('podman', config, {
    name: 'n',
    owner: 'o',
    session: 's',
    workspace: [{ dir: '/srv/data', target: '/workspace' }],
  });
  assert.deepEqual(podman.slice(podman.indexOf('-v'), podman.indexOf('-v') + 2), ['-v', '/srv/data:/workspace:ro,noexec,nosuid,nodev']);
  const docker = runArgs('docker', config, {
    name: 'n',
    owner: 'o',
    session: 's',
    workspace: [{ dir: '/srv/data', target: '/workspace' }],
  });
  const mount = docker[docker.indexOf('--mount') + 1]!;
  assert.match(mount, /^type=volume,dst=\/workspace,/);
  assert.match(mount, /volume-opt=device=\/srv\/data,/);
  assert.match(mount, /"volume-opt=o=bind,ro,noexec,nosuid,nodev"$/);
  assert.ok(docker.indexOf('--mount') > docker.indexOf('--read-only'), 'after the hardening flags');
});

test('the workspace folder is checked: absolute, existing, a folder, not a root, home or the state dir', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cem-ws-unit-'));
  try {
    writeFileSync(join(dir, 'file.txt'), 'x');
    mkdirSync(join(dir, 'state'));
    symlinkSync(join(dir, 'state'), join(dir, 'link'));
    const ws = (path: string) => defaultSandboxConfig({ workspace: { path, access: 'read-only' } });
    assert.equal(resolveWorkspaceDir(defaultSandboxConfig()), undefined);
    assert.equal(resolveWorkspaceDir(defaultSandboxConfig({ workspace: { path: dir, access: 'none' } })), undefined);
    assert.equal(resolveWorkspaceDir(ws(join(dir, 'link'))), realpathSync(join(dir, 'state')), 'through realpath');
    assert.throws(() => resolveWorkspaceDir(ws(join(dir, 'missing'))), /does not exist/);
    assert.throws(() => resolveWorkspaceDir(ws(join(dir, 'file.txt'))), /not a folder/);
    assert.throws(() => resolveWorkspaceDir(ws('/')), /file-system root/);
    assert.throws(() => resolveWorkspaceDir(ws(homedir())), /home folder/);
    assert.throws(() => resolveWorkspaceDir(ws(join(dir, 'link')), [join(dir, 'state')]), /state folder/);
    assert.throws(() => resolveWorkspaceDir(ws(dir), [join(dir, 'state')]), /state folder/, 'a folder that holds the state dir');
    assert.throws(() => defaultSandboxConfig({ workspace: { path: 'relative/dir', access: 'read-only' } }), /absolute/);
    assert.throws(() => defaultSandboxConfig({ workspace: { path: '/a,b', access: 'read-only' } }), /must not contain/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('several folders are mounted each at its own name under /workspace, each checked like one', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cem-ws-unit-'));
  try {
    for (const name of ['app', 'lib', 'file.txt']) {
      if (name.includes('.')) writeFileSync(join(dir, name), 'x');
      else mkdirSync(join(dir, name));
    }
    const ws = (path: string[]) => defaultSandboxConfig({ workspace: { path, access: 'read-only' } });
    const mounts = resolveWorkspaceMounts(ws([join(dir, 'app'), join(dir, 'lib')]));
    assert.deepEqual(mounts, [
      { dir: realpathSync(join(dir, 'app')), target: '/workspace/app' },
      { dir: realpathSync(join(dir, 'lib')), target: '/workspace/lib' },
    ]);
    const podman = runArgs('podman', ws([join(dir, 'app'), join(dir, 'lib')]), { name: 'n', owner: 'o', session: 's', workspace: mounts });
    assert.deepEqual(
      podman.filter((_, i) => podman[i - 1] === '-v'),
      mounts.map((m) => `${m.dir}:${m.target}:ro,noexec,nosuid,nodev`),
    );
    const docker = runArgs('docker', ws([join(dir, 'app'), join(dir, 'lib')]), { name: 'n', owner: 'o', session: 's', workspace: mounts });
    const dockerMounts = docker.filter((_, i) => docker[i - 1] === '--mount');
    assert.equal(dockerMounts.length, 2);
    assert.match(dockerMounts[1]!, /^type=volume,dst=\/workspace\/lib,.*"volume-opt=o=bind,ro,noexec,nosuid,nodev"$/);
    // One bad folder refuses the whole mount, named.
    assert.throws(() => resolveWorkspaceMounts(ws([join(dir, 'app'), join(dir, 'file.txt')])), /not a folder: .*file\.txt/);
    assert.throws(() => resolveWorkspaceMounts(ws([join(dir, 'app'), '/'])), /file-system root/);
    assert.throws(() => resolveWorkspaceMounts(ws([join(dir, 'app'), homedir()])), /home folder/);
    assert.throws(() => resolveWorkspaceMounts(ws([join(dir, 'lib'), dir]), [join(dir, 'app')]), /state folder/);
    // The list is capped, and every entry is checked as a path.
    const many = Array.from({ length: MAX_WORKSPACE_FOLDERS + 1 }, (_, i) => `/srv/f${i}`);
    assert.doesNotThrow(() => ws(many.slice(0, MAX_WORKSPACE_FOLDERS)));
    assert.throws(() => ws(many), /16/);
    assert.throws(() => ws([]), /sandbox|path|1/);
    assert.throws(() => ws(['/srv/a', 'relative']), /absolute/);
    assert.throws(() => ws(['/srv/a', '/srv/b:c']), /must not contain/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a remote runtime is recognised, and the workspace is then copied in, not mounted', () => {
  assert.equal(remoteRuntimeHost('docker', { DOCKER_HOST: 'tcp://10.0.0.2:2376' }), 'tcp://10.0.0.2:2376');
  assert.equal(remoteRuntimeHost('docker', { DOCKER_HOST: 'ssh://me:secret@box' }), 'ssh://me@box');
  assert.equal(remoteRuntimeHost('docker', { DOCKER_HOST: 'unix:///var/run/docker.sock' }), undefined);
  // ssh to this machine's loopback is podman machine's (or lima's) VM, which shares the home folder: local, as endpoint.ts says.
  assert.equal(remoteRuntimeHost('podman', { CONTAINER_HOST: 'ssh://core@localhost:2222/run/podman.sock' }), undefined);
  assert.equal(remoteRuntimeHost('podman', { CONTAINER_HOST: 'ssh://core@box:22/run/podman.sock' }), 'ssh://core@box:22/run/podman.sock');
  assert.equal(remoteRuntimeHost('podman', { DOCKER_HOST: 'tcp://x:1' }), undefined);
  const config = defaultSandboxConfig({ workspace: { path: tmpdir(), access: 'read-only' } });
  assert.deepEqual(workspaceSpec('docker', config, { DOCKER_HOST: 'tcp://10.0.0.2:2376' }), {
    snapshot: [{ dir: realpathSync(tmpdir()), target: '/workspace' }],
  });
  assert.deepEqual(workspaceSpec('docker', config, {}), { workspace: [{ dir: realpathSync(tmpdir()), target: '/workspace' }] });
});

test('podman runs a sandbox in its own user namespace when the runtime check found it works; docker never', () => {
  const config = defaultSandboxConfig({ image: 'img:1' });
  const own = runArgs('podman', config, { name: 'n', owner: 'o', session: 's', ownUserNamespace: true });
  assert.equal(own.filter((a) => a.startsWith('--userns')).length, 1);
  // An explicit size: podman 4.3's estimate from the image deadlocks concurrent starts.
  const userns = own.indexOf('--userns=auto:size=65536');
  assert.equal(own[userns - 1], '65534:65534', 'right after --user, which it maps');
  assert.ok(userns < own.indexOf('img:1'));
  for (const args of [
    runArgs('podman', config, { name: 'n', owner: 'o', session: 's' }),
    runArgs('podman', config, { name: 'n', owner: 'o', session: 's', ownUserNamespace: false }),
    runArgs('docker', config, { name: 'n', owner: 'o', session: 's', ownUserNamespace: true }),
  ]) {
    assert.ok(!args.some((a) => a.startsWith('--userns')), args.join(' '));
  }
  // The tmpfs options do not depend on it: podman's mode=1777 lets the mapped uid write.
  assert.deepEqual(pairs(own, '--tmpfs'), pairs(runArgs('podman', config, { name: 'n', owner: 'o', session: 's' }), '--tmpfs'));
});

test('the sandbox sets its own open-file and process limits, clamped to the host hard limits', () => {
  const config = defaultSandboxConfig({ image: 'img:1', pids: 100, maxSessions: 4 });
  for (const runtime of ['podman', 'docker'] as const) {
    const roomy = runArgs(runtime, config, { name: 'n', owner: 'o', session: 's', hostLimits: { nofile: 20_000, nproc: 96_365 } });
    assert.deepEqual(pairs(roomy, '--ulimit'), ['nofile=1024:1024', 'nproc=4096:4096']);
    const tight = runArgs(runtime, config, { name: 'n', owner: 'o', session: 's', hostLimits: { nofile: 512, nproc: 1000 } });
    assert.deepEqual(pairs(tight, '--ulimit'), ['nofile=512:512', 'nproc=1000:1000']);
    const unknown = runArgs(runtime, config, { name: 'n', owner: 'o', session: 's', hostLimits: {} });
    assert.deepEqual(pairs(unknown, '--ulimit'), ['nofile=1024:1024', 'nproc=4096:4096']);
  }
  // RLIMIT_NPROC counts every sandbox of the shared user id: room for all sessions and the spare.
  const many = runArgs('podman', defaultSandboxConfig({ pids: 2000, maxSessions: 4 }), {
    name: 'n',
    owner: 'o',
    session: 's',
    hostLimits: {},
  });
  assert.deepEqual(pairs(many, '--ulimit'), ['nofile=1024:1024', 'nproc=10000:10000']);
});

test("a remote engine's sandbox gets the configured limits, not clamped to this machine's hard limits", () => {
  assert.deepEqual(engineHardLimits(true), {});
  assert.deepEqual(engineHardLimits(false), hostHardLimits());
  // Far above any host's hard process limit here: a remote engine's own limits decide (and refuse it, if so, at the start).
  const config = defaultSandboxConfig({ pids: 65_536, maxSessions: 63 });
  for (const runtime of ['podman', 'docker'] as const) {
    const args = runArgs(runtime, config, { name: 'n', owner: 'o', session: 's', hostLimits: engineHardLimits(true) });
    assert.deepEqual(pairs(args, '--ulimit'), ['nofile=1024:1024', 'nproc=4194304:4194304']);
  }
});

test("a --ulimit in extraRunArgs replaces the sandbox's own for that limit only", () => {
  const config = defaultSandboxConfig({ extraRunArgs: ['--ulimit=nofile=4096:4096'] });
  const args = runArgs('podman', config, { name: 'n', owner: 'o', session: 's', hostLimits: {} });
  assert.deepEqual(pairs(args, '--ulimit'), ['nproc=4096:4096']);
  assert.equal(args[1], '--ulimit=nofile=4096:4096');
  const both = runArgs('docker', defaultSandboxConfig({ extraRunArgs: ['--ulimit', 'nproc=64', '--ulimit', 'nofile=64:64'] }), {
    name: 'n',
    owner: 'o',
    session: 's',
    hostLimits: {},
  });
  assert.deepEqual(pairs(both, '--ulimit'), ['nproc=64', 'nofile=64:64']);
});

test('hard limits are read from /proc/<pid>/limits text; unlimited counts as none', () => {
  const text = [
    'Limit                     Soft Limit           Hard Limit           Units     ',
    'Max processes             96365                96365                processes ',
    'Max open files            1024                 20000                files     ',
    'Max pending signals       96365                96365                signals   ',
  ].join('\n');
  assert.deepEqual(parseProcLimits(text), { nofile: 20_000, nproc: 96_365 });
  assert.deepEqual(parseProcLimits(text.replace('96365                processes', 'unlimited            processes')), { nofile: 20_000 });
  assert.deepEqual(sandboxUlimits({ pids: 128, maxSessions: 4 }, {}), { nofile: 1024, nproc: 4096 });
});

test('an rlimit a runtime may not set is recognised in runc, crun and docker errors', () => {
  assert.equal(
    rlimitFailure('runc create failed: error setting rlimits for ready process: error setting rlimit type 7: operation not permitted'),
    'nofile',
  );
  assert.equal(rlimitFailure('error setting rlimit type 6: operation not permitted'), 'nproc');
  assert.equal(rlimitFailure('crun: setrlimit `RLIMIT_NOFILE`: Operation not permitted'), 'nofile');
  assert.equal(rlimitFailure('setrlimit `RLIMIT_NPROC`: Operation not permitted'), 'nproc');
  assert.equal(rlimitFailure('image not known'), undefined);
});

test("sandbox.ociRuntime: podman gets --runtime and gVisor's network off, docker the registered name; the hardening stays", () => {
  const plain = runArgs('podman', defaultSandboxConfig(), { name: 'n', owner: 'o', session: 's' });
  assert.ok(!plain.includes('--runtime'));
  const podman = runArgs('podman', defaultSandboxConfig({ ociRuntime: 'runsc' }), { name: 'n', owner: 'o', session: 's' });
  assert.deepEqual(pairs(podman, '--runtime'), ['runsc']);
  assert.deepEqual(pairs(podman, '--runtime-flag'), ['network=none']);
  const byPath = runArgs('podman', defaultSandboxConfig({ ociRuntime: '/usr/bin/runsc' }), { name: 'n', owner: 'o', session: 's' });
  assert.deepEqual(pairs(byPath, '--runtime'), ['/usr/bin/runsc']);
  assert.deepEqual(
    pairs(runArgs('podman', defaultSandboxConfig({ ociRuntime: 'crun' }), { name: 'n', owner: 'o', session: 's' }), '--runtime-flag'),
    [],
  );
  const docker = runArgs('docker', defaultSandboxConfig({ ociRuntime: '/usr/bin/runsc' }), {
    name: 'n',
    owner: 'o',
    session: 's',
    ociRuntime: 'runsc',
  });
  assert.deepEqual(pairs(docker, '--runtime'), ['runsc']);
  assert.ok(!docker.includes('--runtime-flag'), 'docker takes runtime flags only from its daemon');
  for (const args of [podman, docker]) {
    assert.deepEqual(pairs(args, '--network'), ['none']);
    assert.ok(args.includes('--read-only'));
    assert.deepEqual(pairs(args, '--cap-drop'), ['ALL']);
    assert.deepEqual(pairs(args, '--user'), ['65534:65534']);
    assert.deepEqual(
      pairs(args, '--security-opt').filter((o) => o === 'no-new-privileges'),
      ['no-new-privileges'],
    );
  }
});

test('sandbox.ociRuntime is a name or an absolute path, never a shell line or an option', () => {
  for (const good of ['runsc', 'crun', 'kata-runtime', '/usr/bin/runsc', '/opt/gvisor/bin/runsc'])
    assert.ok(sandboxConfigSchema.safeParse({ ociRuntime: good }).success, good);
  for (const bad of [
    '',
    '--privileged',
    '-x',
    'runsc; rm -rf /',
    'run sc',
    'bin/runsc',
    '/usr/bin/runsc ',
    '$(id)',
    '/usr/bin/`id`',
    'a'.repeat(65),
    '/usr/bin/',
  ]) {
    const parsed = sandboxConfigSchema.safeParse({ ociRuntime: bad });
    assert.ok(!parsed.success, JSON.stringify(bad));
    assert.match(parsed.error.issues[0]!.message, /name of an OCI runtime .* or an absolute path/);
    assert.deepEqual(parsed.error.issues[0]!.path, ['ociRuntime']);
  }
});

test('docker: an OCI runtime must be registered with the daemon, by name or by path', () => {
  const registered = { runc: { path: 'runc' }, runsc: { path: '/usr/bin/runsc', runtimeArgs: ['--network=none'] } };
  assert.deepEqual(checkDockerOciRuntime(registered, 'runsc').argument, 'runsc');
  assert.deepEqual(checkDockerOciRuntime(registered, '/usr/bin/runsc').argument, 'runsc');
  const missing = checkDockerOciRuntime({ runc: { path: 'runc' } }, 'runsc');
  assert.equal(missing.ok, false);
  assert.match(
    missing.problem ?? '',
    /^runsc is not registered with the docker daemon: add it to daemon.json \(\{"runtimes": \{"runsc": \{"path": "\/usr\/bin\/runsc", "runtimeArgs": \["--network=none"\]\}\}\}\)/,
  );
  assert.equal(checkDockerOciRuntime(undefined, '/opt/runsc').ok, false);
});

// Engines that run containers in a VM (engines/vm.ts), from the `info` and connection or context
// lists the engines print (test/fixtures/engine-info: Docker Desktop, podman machine, colima, and
// the local engines of a Linux host): sandbox.network gives no network there, said as on a remote engine.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { defaultSandboxConfig, type RuntimeName } from '../../src/config/schema.ts';
import { noNetworkText, noteNetwork, probeRuntime, type RuntimeStatus } from '../../src/sandbox/engines/detect.ts';
import { dockerEndpoint, podmanEndpoint, type EngineEndpoint } from '../../src/sandbox/engines/endpoint.ts';
import { engineVm, proxyOutOfReach } from '../../src/sandbox/engines/vm.ts';
import { SessionManager } from '../../src/sandbox/sessions/manager.ts';
import type { SandboxEngine } from '../../src/sandbox/sandbox.ts';
import { writeScript } from '../helpers/script-file.ts';

interface Fixture {
  runtime: RuntimeName;
  platform: NodeJS.Platform;
  contexts?: unknown[];
  connections?: unknown[];
  info: unknown;
}

const FIXTURES = new URL('../fixtures/engine-info/', import.meta.url);

function fixture(name: string): Fixture {
  return JSON.parse(readFileSync(new URL(`${name}.json`, FIXTURES), 'utf8')) as Fixture;
}

/** The list the runtime's CLI prints: docker's context ls (a JSON object a line), podman's connection list (a JSON array). */
function listText(f: Fixture): string {
  return f.runtime === 'docker' ? (f.contexts ?? []).map((c) => JSON.stringify(c)).join('\n') : JSON.stringify(f.connections ?? []);
}

function endpointOf(f: Fixture, env: NodeJS.ProcessEnv = {}): Promise<EngineEndpoint> {
  const input = { env, list: () => Promise.resolve(listText(f)) };
  return f.runtime === 'docker' ? dockerEndpoint(input) : podmanEndpoint(input);
}

async function vmOf(name: string): Promise<string | undefined> {
  const f = fixture(name);
  return engineVm(f.runtime, await endpointOf(f), f.info, f.platform);
}

const on = defaultSandboxConfig({ network: { ...defaultSandboxConfig().network, allow: ['pypi.org'] } });

test('Docker Desktop, podman machine and colima run containers in a VM; the local engines of a Linux host do not', async () => {
  assert.equal(await vmOf('docker-desktop-macos'), 'Docker Desktop');
  assert.equal(await vmOf('docker-desktop-linux'), 'Docker Desktop');
  assert.equal(await vmOf('colima-linux'), 'colima');
  assert.equal(await vmOf('podman-machine-macos'), "podman machine 'podman-machine-default'");
  assert.equal(await vmOf('podman-machine-linux'), "podman machine 'podman-machine-default'");
  assert.equal(await vmOf('docker-engine-linux'), undefined);
  assert.equal(await vmOf('podman-linux'), undefined);
  assert.deepEqual(
    readdirSync(FIXTURES).sort(),
    [
      'colima-linux.json',
      'docker-desktop-linux.json',
      'docker-desktop-macos.json',
      'docker-engine-linux.json',
      'podman-linux.json',
      'podman-machine-linux.json',
      'podman-machine-macos.json',
    ],
    'each fixture is checked above',
  );
});

test('an engine reached at a VM socket counts as in a VM; an unknown local one keeps the network', () => {
  const at = (address: string, runtime: RuntimeName = 'docker', platform: NodeJS.Platform = 'linux') =>
    engineVm(runtime, { runtime, address, source: runtime === 'docker' ? 'DOCKER_HOST' : 'CONTAINER_HOST', remote: false }, {}, platform);
  assert.equal(at('unix:///Users/me/.colima/default/docker.sock', 'docker', 'darwin'), 'colima');
  assert.equal(at('unix:///home/me/.lima/docker/sock/docker.sock'), 'lima');
  assert.equal(at('unix:///home/me/.rd/docker.sock'), 'Rancher Desktop');
  assert.equal(at('unix:///Users/me/.orbstack/run/docker.sock', 'docker', 'darwin'), 'OrbStack');
  assert.equal(at('npipe:////./pipe/dockerDesktopLinuxEngine', 'docker', 'win32'), 'Docker Desktop');
  assert.equal(at('unix:///home/me/.local/share/containers/podman/machine/podman.sock', 'podman'), 'podman machine');
  // podman machine or lima reached over ssh to this machine's loopback, without IsMachine (older podman).
  assert.equal(
    at('ssh://core@127.0.0.1:50123/run/user/1000/podman/podman.sock', 'podman'),
    'ssh://core@127.0.0.1:50123/run/user/1000/podman/podman.sock',
  );
  // Any engine on macOS or Windows runs Linux containers in a VM.
  assert.equal(at('unix:///var/run/docker.sock', 'docker', 'darwin'), 'docker on macOS');
  assert.equal(at('npipe:////./pipe/docker_engine', 'docker', 'win32'), 'docker on Windows');
  assert.equal(engineVm('podman', undefined, undefined, 'darwin'), 'podman on macOS');
  // On Linux: rootful and rootless engines on this kernel, and an unknown engine, keep today's behaviour.
  assert.equal(at('unix:///var/run/docker.sock'), undefined);
  assert.equal(at('unix:///run/user/1000/docker.sock'), undefined);
  assert.equal(at('unix:///run/user/1000/podman/podman.sock', 'podman'), undefined);
  assert.equal(engineVm('docker', undefined, { OperatingSystem: 'Ubuntu 24.04.1 LTS' }, 'linux'), undefined);
  assert.equal(engineVm('docker', undefined, { OperatingSystem: 'Docker Desktop' }, 'linux'), 'Docker Desktop');
  // A remote engine is said as remote, not as a VM.
  assert.equal(
    engineVm('docker', { runtime: 'docker', address: 'tcp://10.0.0.2:2376', source: 'DOCKER_HOST', remote: true }, {}, 'darwin'),
    undefined,
  );
});

test('the proxy is out of reach of a remote engine and of one in a VM, said as on a remote engine', () => {
  const local = { runtime: 'docker' as const, address: 'unix:///var/run/docker.sock', source: 'DOCKER_HOST' as const, remote: false };
  assert.equal(proxyOutOfReach({ name: 'docker', endpoint: local }, {}), undefined);
  assert.deepEqual(proxyOutOfReach({ name: 'docker', endpoint: local, vm: 'Docker Desktop' }, {}), { vm: 'Docker Desktop' });
  assert.deepEqual(proxyOutOfReach({ name: 'docker' }, { DOCKER_HOST: 'ssh://me@box' }), { remote: 'ssh://me@box' });
  assert.equal(
    noNetworkText({ vm: 'Docker Desktop', runtime: 'docker' }),
    "sandbox.network is set, but the sandbox's network needs an engine that runs containers on this machine's kernel; Docker Desktop runs them in a VM, " +
      "whose file sharing cannot carry the network proxy's socket, so the sandbox has no network. For a network, use Docker Engine or rootless Podman installed on Linux itself " +
      '(on Windows, inside WSL 2, with the bridge running there too).',
  );

  const status = (vm?: string) => ({ name: 'docker', checks: [], problems: [], ...(vm ? { vm } : {}) }) as unknown as RuntimeStatus;
  const inVm = status('Docker Desktop');
  noteNetwork(inVm, on, undefined);
  assert.deepEqual(inVm.checks, [
    {
      name: 'network',
      ok: false,
      detail: "none: docker runs containers in a VM (Docker Desktop), which cannot reach this machine's proxy socket",
    },
  ]);
  assert.deepEqual(inVm.problems, [noNetworkText({ vm: 'Docker Desktop', runtime: 'docker' })]);
  const quiet = status('Docker Desktop');
  noteNetwork(quiet, defaultSandboxConfig(), undefined);
  assert.deepEqual([quiet.checks, quiet.problems], [[], []], 'nothing to say without sandbox.network');
  const native = status();
  noteNetwork(native, on, undefined);
  assert.equal(native.checks[0]?.ok, true);

  const notice = (manager: SessionManager, engine: SandboxEngine) =>
    (manager as unknown as { noNetworkNotice(engine: SandboxEngine): string | undefined }).noNetworkNotice(engine);
  const desktop = { kind: 'container', runtime: { name: 'docker', endpoint: local, vm: 'Docker Desktop' } } as unknown as SandboxEngine;
  const manager = new SessionManager(on);
  assert.equal(notice(manager, desktop), noNetworkText({ vm: 'Docker Desktop', runtime: 'docker' }));
  assert.equal(notice(manager, desktop), undefined, 'once');
});

test("the runtime check reads the VM from the engine's own answers (a faked CLI printing them)", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cem-vm-unit-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const probe = async (name: string): Promise<RuntimeStatus> => {
    const f = fixture(name);
    writeFileSync(join(dir, `${name}.info`), JSON.stringify(f.info));
    writeFileSync(join(dir, `${name}.list`), listText(f));
    const cli = writeScript(dir, name, [
      `case "$1" in`,
      `  version) echo '{"Client":{"Version":"1.0"}}' ;;`,
      `  info) cat '${join(dir, `${name}.info`)}' ;;`,
      `  context|system) cat '${join(dir, `${name}.list`)}' ;;`,
      '  *) exit 1 ;;',
      'esac',
    ]);
    return probeRuntime(f.runtime, {
      commands: { [f.runtime]: cli },
      env: { PATH: process.env.PATH ?? '', CEM_CACHE_DIR: join(dir, 'cache') },
    });
  };
  const desktop = await probe('docker-desktop-linux');
  assert.equal(desktop.state, 'ready', JSON.stringify(desktop.checks));
  assert.equal(desktop.vm, 'Docker Desktop');
  const colima = await probe('colima-linux');
  assert.equal(colima.vm, 'colima');
  const machine = await probe('podman-machine-linux');
  assert.equal(machine.vm, "podman machine 'podman-machine-default'");
  const native = await probe('docker-engine-linux');
  assert.equal(native.state, 'ready', JSON.stringify(native.checks));
  assert.equal(native.vm, undefined);
  assert.equal((await probe('podman-linux')).vm, undefined);
});

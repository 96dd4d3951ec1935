// The sandbox's way out, wired (sandbox.network): the socket folder's mount in the run arguments
// (only with the network on), the private folders and their sweep, the container's proxy made
// and ended with its folder, and a run that owns the proxy's requests from its exec to its end.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, readdirSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { defaultSandboxConfig } from '../../src/config/schema.ts';
import { runArgs } from '../../src/sandbox/engines/commands.ts';
import {
  createSocketDir,
  EGRESS_MOUNT,
  listedPipIndex,
  networkEnabled,
  removeOwnSocketDirsNow,
  removeSocketDir,
  removeStaleSocketDirs,
  socketRoot,
} from '../../src/sandbox/egress/socket-dir.ts';
import { openEgress, type ContainerEgress, type StartEgressProxy } from '../../src/sandbox/container/egress-link.ts';
import { KERNEL_FILES } from '../../src/sandbox/container/kernel/source.ts';
import { runOnContainer } from '../../src/sandbox/sessions/run.ts';
import type { Kernel, KernelEvents } from '../../src/sandbox/protocol/kernel-process.ts';
import type { HostMessage } from '../../src/sandbox/protocol/messages.ts';
import type { EgressHandler } from '../../src/sandbox/egress/types.ts';
import { SessionManager } from '../../src/sandbox/sessions/manager.ts';
import type { SandboxEngine } from '../../src/sandbox/sandbox.ts';
import { noteNetwork, type RuntimeStatus } from '../../src/sandbox/engines/detect.ts';

const SPEC = { name: 'n', owner: 'o', session: 's' };
const on = defaultSandboxConfig({
  network: { allow: ['127.0.0.1:8080'], ask: false, maxRequestsPerRun: 5, maxBytesPerRun: 4096, maxConnections: 2 },
});
const off = defaultSandboxConfig();

test('the network is on when a host is listed or asking is on, and off by default', () => {
  assert.equal(networkEnabled(off), false);
  assert.equal(networkEnabled(on), true);
  assert.equal(networkEnabled(defaultSandboxConfig({ network: { ...off.network, ask: true } })), true);
});

test('the socket folder is mounted read-only at /run/cem-net only when given; --network none stays', () => {
  for (const runtime of ['podman', 'docker'] as const) {
    const plain = runArgs(runtime, on, SPEC);
    assert.ok(!plain.some((a) => a.includes(EGRESS_MOUNT)), `${runtime}: no mount without a folder`);
    assert.ok(!plain.some((a) => /PROXY=./.test(a)), `${runtime}: no proxy variable`);
    const args = runArgs(runtime, on, { ...SPEC, egressDir: '/tmp/cem-net-1/2-ab' });
    const mounts = args.filter((a) => a.includes(EGRESS_MOUNT));
    assert.deepEqual(
      mounts,
      runtime === 'podman'
        ? ['/tmp/cem-net-1/2-ab:/run/cem-net:ro,noexec,nosuid,nodev']
        : ['type=bind,source=/tmp/cem-net-1/2-ab,target=/run/cem-net,readonly'],
    );
    assert.equal(args[args.indexOf(mounts[0]!) - 1], runtime === 'podman' ? '-v' : '--mount');
    assert.deepEqual(
      args.flatMap((a, i) => (a === '--network' ? [args[i + 1]] : [])),
      ['none'],
    );
    // Nothing but the mount differs.
    assert.deepEqual(
      args.filter((a, i) => a !== mounts[0] && args[i + 1] !== mounts[0]),
      plain,
    );
  }
});

const base = mkdtempSync(join(tmpdir(), 'cem-egress-unit-'));
after(() => rmSync(base, { recursive: true, force: true }));

test('a socket folder is 0711 inside a 0700 folder of this user, and removed', () => {
  const made = createSocketDir(base);
  assert.equal(statSync(socketRoot(base)).mode & 0o777, 0o700);
  assert.equal(statSync(made.dir).mode & 0o777, 0o711);
  assert.equal(made.socket, join(made.dir, 'egress.sock'));
  assert.match(made.dir, new RegExp(`/${process.pid}-[0-9a-f]{12}$`));
  assert.ok(Buffer.byteLength(createSocketDir().socket) < 104, 'within a unix socket address, macOS included');
  removeSocketDir(made.dir);
  assert.equal(existsSync(made.dir), false);
  removeOwnSocketDirsNow();
});

test("the sweep removes a dead process's folders and keeps a live one's", async () => {
  const mine = createSocketDir(base);
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.on('exit', resolve));
  const dead = join(socketRoot(base), `${child.pid}-abcdef012345`);
  mkdirSync(dead);
  assert.equal(removeStaleSocketDirs(base), 1);
  assert.deepEqual(readdirSync(socketRoot(base)), [mine.dir.split('/').at(-1)]);
  removeSocketDir(mine.dir);
});

/** A proxy that remembers what it was told. */
function recordingProxy(): { start: StartEgressProxy; calls: string[]; sockets: string[] } {
  const calls: string[] = [];
  const sockets: string[] = [];
  const start: StartEgressProxy = async ({ socketPath, session, network }) => {
    sockets.push(socketPath);
    calls.push(`start ${session} ${network().allow.join(',')}`);
    return {
      beginRun: (runId, handler) => calls.push(`begin ${runId} ${handler ? 'handler' : 'none'}`),
      endRun: () => calls.push('end'),
      close: async () => void calls.push('close'),
    };
  };
  return { start, calls, sockets };
}

test("a container's proxy is made only with the network on, a proxy and a local engine, and goes with its folder", async () => {
  const proxy = recordingProxy();
  assert.equal(await openEgress(proxy.start, off, 's', undefined), undefined);
  assert.equal(await openEgress(undefined, on, 's', undefined), undefined);
  assert.equal(await openEgress(proxy.start, on, 's', { remote: 'ssh://host' }), undefined);
  assert.equal(await openEgress(proxy.start, on, 's', { vm: 'Docker Desktop' }), undefined);
  assert.deepEqual(proxy.calls, []);
  const link = await openEgress(proxy.start, on, 's', undefined);
  assert.ok(link && existsSync(link.dir));
  assert.equal(proxy.sockets[0], join(link.dir, 'egress.sock'));
  await Promise.all([link.close(), link.close()]);
  assert.equal(existsSync(link.dir), false);
  assert.deepEqual(proxy.calls, ['start s 127.0.0.1:8080', 'close']);
  const failing: StartEgressProxy = async () => {
    throw new Error('no listen');
  };
  await assert.rejects(openEgress(failing, on, 's', undefined), /no listen/);
  assert.deepEqual(
    readdirSync(socketRoot()).filter((n) => n.startsWith(`${process.pid}-`)),
    [],
    'no folder left by a failed start',
  );
});

test('the forwarder is part of the kernel, before the file that starts it', () => {
  assert.ok(KERNEL_FILES.indexOf('egress.py') > 0 && KERNEL_FILES.indexOf('egress.py') === KERNEL_FILES.indexOf('kernel.py') - 1);
});

/** A kernel that answers each exec with `done` once `finish` is called. */
function fakeKernel(egress: ContainerEgress): { kernel: Kernel; finish: () => void } {
  let listeners: Partial<KernelEvents> = {};
  let exec: Extract<HostMessage, { t: 'exec' }> | undefined;
  const kernel: Kernel = {
    name: 'fake',
    generation: 0,
    alive: true,
    exited: new Promise(() => {}),
    exitStatus: undefined,
    distributions: undefined,
    imageKey: 'fake',
    derivedImage: undefined,
    egress,
    on: (l) => (listeners = l),
    send: (message) => {
      if (message.t === 'exec') exec = message;
    },
    restart: async () => true,
    kill: async () => {},
    close: async () => {},
  };
  const finish = () => listeners.message?.({ t: 'done', run: exec!.run, token: exec!.token, status: 'ok', value: null, error: null });
  return { kernel, finish };
}

test('a run owns the proxy from its exec to its end, and questions to the user do not count against its time', async () => {
  const calls: string[] = [];
  let handed: EgressHandler | undefined;
  let signal: AbortSignal | undefined;
  const egress: ContainerEgress = {
    beginRun: (runId, handler, s) => {
      calls.push(`begin ${runId}`);
      handed = handler;
      signal = s;
    },
    endRun: () => calls.push('end'),
    close: async () => {},
  };
  const { kernel, finish } = fakeKernel(egress);
  const records: unknown[] = [];
  const handler: EgressHandler = {
    ask: () => new Promise((resolve) => setTimeout(() => resolve('once'), 300)),
    record: (entry) => records.push(entry),
  };
  const run = runOnContainer({
    container: kernel,
    runId: 'r1',
    session: 's',
    config: off,
    options: { timeoutMs: 200, egress: handler },
    cold: false,
    started: performance.now(),
    code: 'pass',
  });
  assert.deepEqual(calls, ['begin r1']);
  assert.equal(signal?.aborted, false);
  // Longer than the run's time limit: the clock stands still while the user is asked.
  assert.equal(await handed!.ask({ host: 'example.com', port: 443 }, { runId: 'r1', session: 's', signal: signal! }), 'once');
  handed!.record({
    runId: 'r1',
    host: 'example.com',
    port: 443,
    method: 'CONNECT',
    decision: 'asked',
    bytesIn: 1,
    bytesOut: 2,
    durationMs: 3,
  });
  finish();
  const { result } = await run;
  assert.equal(result.status, 'ok');
  assert.deepEqual(calls, ['begin r1', 'end']);
  assert.equal(signal?.aborted, true, "the run's end ends its waits");
  assert.equal(records.length, 1);
});

test('pip is said to work only when sandbox.network lists its index hosts, and with the index the setting names', async () => {
  const network = (allow: string[]) => ({ ...off.network, allow });
  assert.equal(listedPipIndex(defaultSandboxConfig({ network: network(['pypi.org']) })), undefined);
  assert.equal(listedPipIndex(defaultSandboxConfig({ network: network(['pypi.org', 'files.pythonhosted.org:443']) })), '');
  assert.equal(listedPipIndex(defaultSandboxConfig({ network: network(['*.pypi.org', '*.pythonhosted.org']) })), undefined);
  assert.equal(listedPipIndex(defaultSandboxConfig({ network: network(['pypi.org:80', 'files.pythonhosted.org']) })), undefined);
  const index = 'https://pkgs.example.com:8443/simple/';
  assert.equal(
    listedPipIndex(defaultSandboxConfig({ pipIndexUrl: index, network: network(['pkgs.example.com']) })),
    'https://pkgs.example.com:8443/simple/',
  );
  assert.equal(listedPipIndex(defaultSandboxConfig({ pipIndexUrl: index, network: network(['*.example.com:443']) })), undefined);
  assert.equal(
    listedPipIndex(defaultSandboxConfig({ pipIndexUrl: 'http://127.0.0.1:3141/simple', network: network(['127.0.0.1:3141']) })),
    'http://127.0.0.1:3141/simple',
  );
  const proxy = recordingProxy();
  const listedIndex = defaultSandboxConfig({ network: network(['pypi.org', 'files.pythonhosted.org']) });
  const link = await openEgress(proxy.start, listedIndex, 's', undefined);
  assert.equal(readFileSync(join(link!.dir, 'pip-index'), 'utf8'), '');
  await link!.close();
  const other = await openEgress(proxy.start, on, 's', undefined);
  assert.equal(existsSync(join(other!.dir, 'pip-index')), false);
  await other!.close();
});

test('where sandbox.network cannot apply (a remote engine, WebAssembly), the first run says so, once', () => {
  const notice = (manager: SessionManager, engine: SandboxEngine) =>
    (manager as unknown as { noNetworkNotice(engine: SandboxEngine): string | undefined }).noNetworkNotice(engine);
  const remote = {
    kind: 'container',
    runtime: { name: 'docker', endpoint: { runtime: 'docker', address: 'ssh://me@box', source: 'DOCKER_HOST', remote: true } },
  };
  const local = {
    kind: 'container',
    runtime: {
      name: 'docker',
      endpoint: { runtime: 'docker', address: 'unix:///var/run/docker.sock', source: 'DOCKER_HOST', remote: false },
    },
  };
  const withNetwork = new SessionManager(on);
  assert.equal(notice(withNetwork, local as SandboxEngine), undefined);
  assert.match(
    notice(withNetwork, remote as SandboxEngine) ?? '',
    /^sandbox\.network is set, but docker talks to a remote engine \(ssh:\/\/me@box\): it cannot mount this machine's network proxy, so the sandbox has no network\.$/,
  );
  assert.equal(notice(withNetwork, remote as SandboxEngine), undefined, 'once');
  assert.equal(notice(new SessionManager(off), remote as SandboxEngine), undefined, 'nothing to say without sandbox.network');
  assert.match(notice(new SessionManager(on), { kind: 'wasm' }) ?? '', /the WebAssembly sandbox has no network at all/);
});

test("the runtime check says how the network goes: through the proxy on a local engine, none on a remote one (as the workspace's mount)", () => {
  const status = () => ({ name: 'podman', checks: [], problems: [] }) as unknown as RuntimeStatus;
  const quiet = status();
  noteNetwork(quiet, off, undefined);
  assert.deepEqual([quiet.checks, quiet.problems], [[], []]);
  const local = status();
  noteNetwork(local, defaultSandboxConfig({ network: { ...on.network, ask: true } }), undefined);
  assert.deepEqual(local.checks, [
    {
      name: 'network',
      ok: true,
      detail: "through the bridge's proxy only (the container has no network interface): 1 host listed, others asked",
    },
  ]);
  const remote = status();
  noteNetwork(remote, on, 'ssh://me@box');
  assert.equal(remote.checks[0]?.ok, false);
  assert.match(remote.checks[0]?.detail ?? '', /^none: podman runs on another machine \(ssh:\/\/me@box\)/);
  assert.deepEqual(remote.problems, [
    "sandbox.network is set, but podman talks to a remote engine (ssh://me@box): it cannot mount this machine's network proxy, so the sandbox has no network.",
  ]);
});

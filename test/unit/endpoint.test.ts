import assert from 'node:assert/strict';
import { realpathSync } from 'node:fs';
import { test } from 'node:test';
import { sandboxConfigSchema } from '../../src/config/schema.ts';
import { cliArgv, setLeadingArgs } from '../../src/sandbox/engines/cli.ts';
import {
  dockerEndpoint,
  EndpointError,
  endpointText,
  isRemoteAddress,
  parseDockerContextTls,
  podmanEndpoint,
  remoteEndpointText,
  selectionArgs,
  withoutPassword,
  type EndpointInput,
} from '../../src/sandbox/engines/endpoint.ts';
import { snapshotTmpfsMiB, workspaceSpec } from '../../src/sandbox/engines/workspace.ts';
import { runArgs } from '../../src/sandbox/engines/commands.ts';

/** A faked environment and CLI list; the list fails the test when it is read but should not be. */
function input(env: NodeJS.ProcessEnv, list?: string, selection?: EndpointInput['selection']): EndpointInput {
  return {
    env,
    selection,
    list: () => (list === undefined ? Promise.reject(new Error('the list was not to be asked')) : Promise.resolve(list)),
  };
}

const PODMAN_LIST = JSON.stringify([
  { Name: 'local', URI: 'unix:///run/user/1000/podman/podman.sock', Identity: '', Default: false },
  { Name: 'machine-default', URI: 'ssh://core:hunter2@127.0.0.1:50123/run/user/501/podman/podman.sock', Identity: '/k', Default: true },
]);

const DOCKER_LIST = [
  { Current: false, Description: '', DockerEndpoint: 'unix:///var/run/docker.sock', Error: '', Name: 'default' },
  { Current: true, Description: '', DockerEndpoint: 'tcp://build:s3cret@10.0.0.9:2376', Error: '', Name: 'farm' },
  { Current: false, Description: '', DockerEndpoint: 'ssh://me@box', Error: '', Name: 'box' },
]
  .map((c) => JSON.stringify(c))
  .join('\n');

test('podman: CONTAINER_HOST wins over the connections, each form named local or remote', async () => {
  const unix = await podmanEndpoint(input({ CONTAINER_HOST: 'unix:///run/podman/podman.sock' }));
  assert.deepEqual(unix, { runtime: 'podman', address: 'unix:///run/podman/podman.sock', source: 'CONTAINER_HOST', remote: false });
  const tcp = await podmanEndpoint(input({ CONTAINER_HOST: 'tcp://10.1.2.3:8888' }));
  assert.equal(tcp.remote, true);
  assert.equal(endpointText(tcp), 'remote engine tcp://10.1.2.3:8888 (CONTAINER_HOST)');
  const ssh = await podmanEndpoint(input({ CONTAINER_HOST: 'ssh://core:pw@host:22/run/podman.sock' }));
  assert.equal(ssh.address, 'ssh://core@host:22/run/podman.sock');
  assert.equal(ssh.remote, true);
});

test("podman: the default connection, named, its password left out; podman machine's (ssh to loopback) is this machine's", async () => {
  const endpoint = await podmanEndpoint(input({}, PODMAN_LIST));
  assert.equal(endpoint.name, 'machine-default');
  assert.equal(endpoint.source, "podman's default connection");
  // The virtual machine shares the home folder: the workspace can still be mounted.
  assert.equal(endpoint.remote, false);
  const text = endpointText(endpoint);
  assert.equal(
    text,
    "connection 'machine-default' (local engine ssh://core@127.0.0.1:50123/run/user/501/podman/podman.sock) (podman's default connection)",
  );
  assert.doesNotMatch(text, /hunter2/);
  assert.equal(remoteEndpointText(endpoint), undefined);
  const elsewhere = await podmanEndpoint(input({}, PODMAN_LIST.replace('127.0.0.1', 'build.example')));
  assert.equal(elsewhere.remote, true);
  assert.match(remoteEndpointText(elsewhere) ?? '', /^connection 'machine-default', ssh:\/\/core@build\.example/);
});

test('an address is remote unless it is a socket, a pipe, or ssh to loopback', () => {
  for (const local of [
    'unix:///run/podman/podman.sock',
    '/var/run/docker.sock',
    'npipe:////./pipe/docker_engine',
    'ssh://core@127.0.0.1:50123/run/podman.sock',
    'ssh://localhost/run/podman.sock',
    'ssh://me@[::1]:22/x',
  ])
    assert.equal(isRemoteAddress(local), false, local);
  for (const remote of [
    'tcp://127.0.0.1:2376',
    'tcp://box:2376',
    'ssh://me@box',
    'ssh://me@127.0.0.1.example/x',
    'ssh://localhost.example/x',
    'http://127.0.0.1:2375',
  ])
    assert.equal(isRemoteAddress(remote), true, remote);
});

test('podman: no connection and no CONTAINER_HOST is its own local socket; empty lists are null or []', async () => {
  for (const list of ['', 'null', '[]']) {
    assert.deepEqual(await podmanEndpoint(input({}, list)), { runtime: 'podman', source: 'built-in default', remote: false });
  }
});

test('podman: the setting picks a connection; a missing one says how to list them; CONTAINER_HOST beside it is refused', async () => {
  await assert.rejects(
    podmanEndpoint(input({ CONTAINER_HOST: 'tcp://u:pw@x:1' }, PODMAN_LIST, { podmanConnection: 'local' })),
    (error: Error) =>
      error instanceof EndpointError && /CONTAINER_HOST is set too \(tcp:\/\/u@x:1\).*unset CONTAINER_HOST/.test(error.message),
  );
  const picked = await podmanEndpoint(input({}, PODMAN_LIST, { podmanConnection: 'local' }));
  assert.deepEqual(picked, {
    runtime: 'podman',
    address: 'unix:///run/user/1000/podman/podman.sock',
    source: 'setting',
    remote: false,
    name: 'local',
  });
  assert.match(endpointText(picked), /\(sandbox\.podmanConnection\)$/);
  await assert.rejects(
    podmanEndpoint(input({}, PODMAN_LIST, { podmanConnection: 'gone' })),
    (error: Error) => error instanceof EndpointError && /'gone'.*`podman system connection list`/.test(error.message),
  );
  const fromEnv = await podmanEndpoint(input({ CONTAINER_CONNECTION: 'local' }, PODMAN_LIST));
  assert.equal(fromEnv.source, 'CONTAINER_CONNECTION');
});

test('docker: DOCKER_HOST unix is local, tcp with DOCKER_TLS_VERIFY is TLS, ssh is remote, passwords out', async () => {
  const unix = await dockerEndpoint(input({ DOCKER_HOST: 'unix:///var/run/docker.sock' }));
  assert.deepEqual(unix, { runtime: 'docker', address: 'unix:///var/run/docker.sock', source: 'DOCKER_HOST', remote: false });
  const tls = await dockerEndpoint(input({ DOCKER_HOST: 'tcp://host:2376', DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: '/c' }));
  assert.equal(endpointText(tls), 'remote engine tcp://host:2376 (DOCKER_HOST, TLS)');
  const plain = await dockerEndpoint(input({ DOCKER_HOST: 'tcp://host:2375', DOCKER_TLS_VERIFY: '' }));
  assert.equal(plain.tls, undefined);
  const unverified = await dockerEndpoint(input({ DOCKER_HOST: 'tcp://host:2376', DOCKER_TLS: '1' }));
  assert.equal(endpointText(unverified), 'remote engine tcp://host:2376 (DOCKER_HOST, TLS without verifying the server)');
  const ssh = await dockerEndpoint(input({ DOCKER_HOST: 'ssh://me:pw@box' }));
  assert.equal(ssh.address, 'ssh://me@box');
  assert.equal(ssh.remote, true);
});

test('docker: DOCKER_CONTEXT, else the current context, else the setting over both', async () => {
  const current = await dockerEndpoint(input({}, DOCKER_LIST));
  assert.equal(current.name, 'farm');
  assert.equal(current.source, "docker's current context");
  assert.equal(current.address, 'tcp://build@10.0.0.9:2376');
  assert.equal(current.remote, true);
  const env = await dockerEndpoint(input({ DOCKER_CONTEXT: 'box' }, DOCKER_LIST));
  assert.equal(endpointText(env), "context 'box' (remote engine ssh://me@box) (DOCKER_CONTEXT)");
  const picked = await dockerEndpoint(
    input({ DOCKER_HOST: 'tcp://x:1', DOCKER_CONTEXT: 'box' }, DOCKER_LIST, { dockerContext: 'default' }),
  );
  assert.equal(endpointText(picked), "context 'default' (local engine unix:///var/run/docker.sock) (sandbox.dockerContext)");
  assert.equal(remoteEndpointText(picked), undefined);
  await assert.rejects(
    dockerEndpoint(input({ DOCKER_CONTEXT: 'gone' }, DOCKER_LIST)),
    (error: Error) => error instanceof EndpointError && /DOCKER_CONTEXT.*'gone'.*`docker context ls`/.test(error.message),
  );
});

/** `docker context inspect` of contexts made with --docker "host=tcp://…,ca=…,cert=…,key=…" (docker 28), trimmed of Storage. */
const inspected = (name: string, skip: boolean, material: string[]) =>
  JSON.stringify([
    {
      Name: name,
      Metadata: {},
      Endpoints: { docker: { Host: 'tcp://127.0.0.1:1', SkipTLSVerify: skip } },
      TLSMaterial: material.length ? { docker: material } : {},
      Storage: { MetadataPath: '/c/meta/f2', TLSPath: '/c/tls/f2' },
    },
  ]);

test("docker: a context's TLS material is TLS, its skip-tls-verify TLS without verifying; inspected only for tcp", async () => {
  const pem = ['ca.pem', 'cert.pem', 'key.pem'];
  assert.equal(parseDockerContextTls(inspected('tls', false, pem)), 'verified');
  assert.equal(parseDockerContextTls(inspected('skip', true, pem)), 'unverified');
  assert.equal(parseDockerContextTls(inspected('plain', false, [])), undefined);
  assert.throws(() => parseDockerContextTls('[]'), EndpointError);
  const list = [
    { Current: true, Description: '', DockerEndpoint: 'tcp://127.0.0.1:1', Error: '', Name: 'farm' },
    { Current: false, Description: '', DockerEndpoint: 'ssh://me@box', Error: '', Name: 'box' },
  ]
    .map((c) => JSON.stringify(c))
    .join('\n');
  const asked: string[] = [];
  const withInspect = (env: NodeJS.ProcessEnv, json: string): EndpointInput => ({
    ...input(env, list),
    inspect: (name) => (asked.push(name), Promise.resolve(json)),
  });
  const verified = await dockerEndpoint(withInspect({}, inspected('farm', false, pem)));
  assert.equal(endpointText(verified), "context 'farm' (remote engine tcp://127.0.0.1:1) (docker's current context, TLS)");
  const skipped = await dockerEndpoint(withInspect({}, inspected('farm', true, pem)));
  assert.equal(
    endpointText(skipped),
    "context 'farm' (remote engine tcp://127.0.0.1:1) (docker's current context, TLS without verifying the server)",
  );
  const plain = await dockerEndpoint(withInspect({}, inspected('farm', false, [])));
  assert.equal(plain.tls, undefined);
  assert.deepEqual(asked, ['farm', 'farm', 'farm']);
  await dockerEndpoint(withInspect({ DOCKER_CONTEXT: 'box' }, '[]'));
  assert.equal(asked.length, 3, 'an ssh context is not inspected');
});

test('passwords are stripped from any address; user names and paths stay', () => {
  assert.equal(withoutPassword('tcp://u:p@h:1/x'), 'tcp://u@h:1/x');
  assert.equal(withoutPassword('ssh://:p@h'), 'ssh://h');
  assert.equal(withoutPassword('unix:///run/a@b.sock'), 'unix:///run/a@b.sock');
});

test('the settings put --connection / --context before every CLI call of that command', () => {
  assert.deepEqual(selectionArgs('podman', { podmanConnection: 'box' }), ['--connection', 'box']);
  assert.deepEqual(selectionArgs('docker', { dockerContext: 'ctx', podmanConnection: 'box' }), ['--context', 'ctx']);
  assert.deepEqual(selectionArgs('docker', {}), []);
  setLeadingArgs('/fake/docker', ['--context', 'ctx']);
  assert.deepEqual(cliArgv('/fake/docker', ['ps']), ['--context', 'ctx', 'ps']);
  assert.deepEqual(cliArgv('/fake/podman', ['ps']), ['ps']);
  setLeadingArgs('/fake/docker', []);
  assert.deepEqual(cliArgv('/fake/docker', ['ps']), ['ps']);
});

test('the names are settings values, never options', () => {
  assert.equal(sandboxConfigSchema.safeParse({ dockerContext: 'my-ctx.1' }).success, true);
  assert.equal(sandboxConfigSchema.safeParse({ dockerContext: '--host=tcp://x' }).success, false);
  assert.equal(sandboxConfigSchema.safeParse({ podmanConnection: 'a b' }).success, false);
});

test('a remote endpoint drops the workspace mount for a snapshot, whatever the environment says', () => {
  const config = sandboxConfigSchema.parse({ workspace: { access: 'read-only', path: process.cwd() } });
  const remote = {
    runtime: 'podman' as const,
    name: 'm',
    address: 'ssh://core@127.0.0.1:1/x',
    source: "podman's default connection" as const,
    remote: true,
  };
  const here = [{ dir: realpathSync(process.cwd()), target: '/workspace' }];
  assert.deepEqual(workspaceSpec('podman', config, {}, undefined, remote), { snapshot: here });
  const local = { ...remote, address: 'unix:///run/podman/podman.sock', remote: false };
  assert.deepEqual(workspaceSpec('podman', config, {}, undefined, local), { workspace: here });
  // Without the check's endpoint, the environment decides.
  assert.deepEqual(workspaceSpec('docker', config, { DOCKER_HOST: 'tcp://10.0.0.2:2376' }), { snapshot: here });
  assert.deepEqual(workspaceSpec('docker', sandboxConfigSchema.parse({}), { DOCKER_HOST: 'tcp://10.0.0.2:2376' }), {});
});

test('a snapshot gets a /workspace tmpfs sized from its cap, noexec and owned as /tmp is', () => {
  const config = sandboxConfigSchema.parse({ image: 'img:1', workspace: { access: 'read-only', path: process.cwd(), snapshotMaxMB: 50 } });
  assert.equal(snapshotTmpfsMiB(config), 116);
  const spec = { name: 'n', owner: 'o', session: 's', snapshot: [{ dir: '/srv/app', target: '/workspace' }] };
  const tmpfs = (args: string[]) =>
    args.flatMap((a, i) => (a === '--tmpfs' && args[i + 1]?.startsWith('/workspace:') ? [args[i + 1]] : []));
  assert.deepEqual(tmpfs(runArgs('podman', config, spec)), ['/workspace:rw,noexec,nosuid,nodev,size=116m,mode=1777']);
  assert.deepEqual(tmpfs(runArgs('docker', config, spec)), ['/workspace:rw,noexec,nosuid,nodev,size=116m,uid=65534,gid=65534,mode=0700']);
  assert.deepEqual(tmpfs(runArgs('docker', config, { name: 'n', owner: 'o', session: 's' })), []);
});

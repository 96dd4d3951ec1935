// Which engine the runtime CLIs talk to, against the real CLIs on this machine's own sockets
// (never another address): DOCKER_HOST named local; a docker context and a podman connection
// made by the test (the connection to a podman service the test starts on a socket of its own),
// picked through the settings, used by every call of a run; a name that does not exist refused
// with the command that lists them; a docker context holding TLS material (certificates made by
// the test, an address nothing listens on and nothing contacts) named TLS.
import assert from 'node:assert/strict';
import { execa } from 'execa';
import { existsSync } from 'node:fs';
import { copyFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { probeRuntime } from '../../src/sandbox/engines/detect.ts';
import { detectEndpoint, endpointText } from '../../src/sandbox/engines/endpoint.ts';
import { startBridge, structured, tempDir, textOf } from '../helpers/bridge.ts';
import { TEST_IMAGE, testRuntimes } from '../helpers/env.ts';
import { until } from '../helpers/wait.ts';

const DOCKER_SOCKET = '/var/run/docker.sock';
/** A socket nothing listens on: if the chosen context or connection were not used, every call would fail. */
const NOWHERE = 'unix:///nonexistent/cem-engine.sock';
const cli = (args: string[], env: Record<string, string> = {}) =>
  execa(process.execPath, ['dist/cli.js', ...args], { reject: false, env: { ...process.env, ...env } });

/** Runs a line through a bridge whose sandbox is `sandbox`, with `env`; returns its value. */
async function runThrough(sandbox: Record<string, unknown>, env: Record<string, string>): Promise<string> {
  const bridge = await startBridge({ sandbox: { image: TEST_IMAGE, ...sandbox } }, env);
  try {
    const result = await bridge.call('6 * 7');
    assert.ok(!result.isError, textOf(result) + bridge.stderr());
    return String(structured(result).value);
  } finally {
    await bridge.close();
  }
}

/** `doctor` with a configuration file holding `sandbox`. */
async function doctor(sandbox: Record<string, unknown>, env: Record<string, string>): Promise<string> {
  const file = join(await tempDir('cem-endpoint-'), 'config.json');
  await writeFile(file, JSON.stringify({ sandbox: { backend: 'container', image: TEST_IMAGE, ...sandbox } }));
  const result = await cli(['doctor', '--config', file], env);
  return result.stdout + result.stderr;
}

describe('docker engine endpoint', { skip: !testRuntimes().includes('docker') && 'docker is not among the test runtimes' }, () => {
  const context = `cem-test-ctx-${process.pid}`;
  before(async () => {
    await execa('docker', ['context', 'create', context, '--docker', `host=unix://${DOCKER_SOCKET}`]);
  });
  after(async () => {
    await execa('docker', ['context', 'rm', '--force', context], { reject: false });
  });

  test('DOCKER_HOST on a unix socket is named, and local', async () => {
    const status = await probeRuntime('docker', { env: { ...process.env, DOCKER_HOST: `unix://${DOCKER_SOCKET}` } });
    assert.deepEqual(status.endpoint, { runtime: 'docker', address: `unix://${DOCKER_SOCKET}`, source: 'DOCKER_HOST', remote: false });
    assert.deepEqual(
      status.checks.find((c) => c.name === 'engine'),
      { name: 'engine', ok: true, detail: `local engine unix://${DOCKER_SOCKET} (DOCKER_HOST)` },
    );
  });

  test('sandbox.dockerContext is used by every call of a run, and doctor names it', async () => {
    // DOCKER_HOST points nowhere: only --context on every call reaches the engine.
    const env = { DOCKER_HOST: NOWHERE };
    assert.equal(await runThrough({ runtime: 'docker', dockerContext: context }, env), '42');
    const report = await doctor({ runtime: 'docker', dockerContext: context }, env);
    assert.match(
      report,
      new RegExp(`ok   engine endpoint: context '${context}' \\(local engine unix://${DOCKER_SOCKET}\\) \\(sandbox\\.dockerContext\\)`),
    );
    assert.match(report, /Sandbox: ready with docker/);
  });

  test('a docker context with TLS material is named TLS, or TLS without verifying with skip-tls-verify', async () => {
    // The test's own docker configuration folder, so that the user's contexts are neither listed nor changed.
    const dir = await tempDir('cem-docker-tls-');
    const env = { ...process.env, DOCKER_CONFIG: join(dir, 'config') };
    const pem = (name: string) => join(dir, `${name}.pem`);
    const openssl = (...args: string[]) => execa('openssl', args, { cwd: dir });
    await openssl(
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      pem('ca-key'),
      '-out',
      pem('ca'),
      '-days',
      '1',
      '-subj',
      '/CN=cem-ca',
    );
    await openssl(
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      pem('key'),
      '-out',
      join(dir, 'client.csr'),
      '-subj',
      '/CN=cem-client',
    );
    await openssl(
      'x509',
      '-req',
      '-in',
      join(dir, 'client.csr'),
      '-CA',
      pem('ca'),
      '-CAkey',
      pem('ca-key'),
      '-CAcreateserial',
      '-out',
      pem('cert'),
      '-days',
      '1',
    );
    const material = `host=tcp://127.0.0.1:1,ca=${pem('ca')},cert=${pem('cert')},key=${pem('key')}`;
    await execa('docker', ['context', 'create', 'cem-tls', '--docker', material], { env });
    await execa('docker', ['context', 'create', 'cem-tls-skip', '--docker', `${material},skip-tls-verify=true`], { env });
    await execa('docker', ['context', 'create', 'cem-plain', '--docker', 'host=tcp://127.0.0.1:1'], { env });
    try {
      const named = async (dockerContext: string) =>
        endpointText(await detectEndpoint('docker', 'docker', { env, selection: { dockerContext } }));
      assert.equal(await named('cem-tls'), "context 'cem-tls' (remote engine tcp://127.0.0.1:1) (sandbox.dockerContext, TLS)");
      assert.equal(
        await named('cem-tls-skip'),
        "context 'cem-tls-skip' (remote engine tcp://127.0.0.1:1) (sandbox.dockerContext, TLS without verifying the server)",
      );
      assert.equal(await named('cem-plain'), "context 'cem-plain' (remote engine tcp://127.0.0.1:1) (sandbox.dockerContext)");
    } finally {
      await execa('docker', ['context', 'rm', '--force', 'cem-tls', 'cem-tls-skip', 'cem-plain'], { env, reject: false });
    }
  });

  test('a docker context that does not exist is refused with the command that lists them', async () => {
    const report = await doctor({ runtime: 'docker', dockerContext: 'cem-no-such-context' }, {});
    assert.match(
      report,
      /FAIL engine endpoint: sandbox\.dockerContext names docker context 'cem-no-such-context', which does not exist: `docker context ls` lists them/,
    );
  });
});

/**
 * A podman service on a socket of the test's own (`podman system service`, this machine's
 * storage), answering; `stop` ends it. Undefined when podman cannot serve its API here.
 */
async function podmanService(): Promise<{ socket: string; stop: () => void; log: () => string } | undefined> {
  const socket = join(await tempDir('cem-podman-service-'), 'podman.sock');
  // At info level the service logs each API request it serves.
  const service = execa('podman', ['--log-level=info', 'system', 'service', '--time=0', `unix://${socket}`], { reject: false, all: true });
  let log = '';
  service.all?.on('data', (chunk: Buffer) => (log += chunk.toString()));
  let exited = false;
  void service.then(() => (exited = true));
  const stop = () => void service.kill();
  try {
    await until('the podman service to answer', async () => {
      if (exited) throw new Error('podman system service exited');
      return existsSync(socket) && (await execa('podman', ['--url', `unix://${socket}`, 'version'], { reject: false })).exitCode === 0;
    });
    return { socket, stop, log: () => log };
  } catch {
    stop();
    return undefined;
  }
}

describe('podman engine endpoint', { skip: !testRuntimes().includes('podman') && 'podman is not among the test runtimes' }, () => {
  const connection = `cem-test-${process.pid}`;

  test('a podman connection that does not exist is refused with the command that lists them', async () => {
    const report = await doctor({ runtime: 'podman', podmanConnection: 'cem-no-such-connection' }, {});
    assert.match(
      report,
      /FAIL engine endpoint: sandbox\.podmanConnection names podman connection 'cem-no-such-connection', which does not exist: `podman system connection list` lists them/,
    );
  });

  test('a podman connection beside CONTAINER_HOST is refused: podman 4 would use CONTAINER_HOST', async () => {
    const report = await doctor({ runtime: 'podman', podmanConnection: connection }, { CONTAINER_HOST: NOWHERE });
    assert.match(
      report,
      new RegExp(
        `FAIL engine endpoint: sandbox\\.podmanConnection names connection '${connection}', but CONTAINER_HOST is set too \\(${NOWHERE}\\)`,
      ),
    );
  });

  test('without a connection or CONTAINER_HOST, podman is named local', async () => {
    const env = { ...process.env };
    delete env.CONTAINER_HOST;
    delete env.CONTAINER_CONNECTION;
    const status = await probeRuntime('podman', { env });
    assert.equal(status.endpoint?.remote, false, JSON.stringify(status.endpoint));
  });

  describe('a connection picked through sandbox.podmanConnection', () => {
    let service: Awaited<ReturnType<typeof podmanService>>;
    // Podman writes connections into its containers.conf: the test's own copy, so that neither the
    // user's file nor one that other podman commands read meanwhile is rewritten.
    const conf: Record<string, string> = {};
    before(async () => {
      const file = join(await tempDir('cem-podman-conf-'), 'containers.conf');
      if (process.env.CONTAINERS_CONF) await copyFile(process.env.CONTAINERS_CONF, file);
      else await writeFile(file, '');
      conf.CONTAINERS_CONF = file;
      service = await podmanService();
      if (service)
        await execa('podman', ['system', 'connection', 'add', connection, `unix://${service.socket}`], {
          env: { ...process.env, ...conf },
        });
    });
    after(async () => {
      await execa('podman', ['system', 'connection', 'remove', connection], { reject: false, env: { ...process.env, ...conf } });
      service?.stop();
    });

    test('is used by every call of a run, and doctor names it', async (t) => {
      if (!service) return t.skip('podman cannot serve its API on a socket here');
      // Not beside CONTAINER_HOST, which the check refuses (the test above). The service
      // shares this machine's storage, so its own log says the sandbox was created through it.
      const env = conf;
      assert.equal(await runThrough({ runtime: 'podman', podmanConnection: connection }, env), '42');
      assert.match(service.log(), /POST \/v[\d.]+\/libpod\/containers\/create/);
      const report = await doctor({ runtime: 'podman', podmanConnection: connection }, env);
      assert.match(report, new RegExp(`ok   engine endpoint: connection '${connection}' \\(local engine unix://${service.socket}\\)`));
      assert.match(report, /Sandbox: ready with podman/);
    });
  });
});

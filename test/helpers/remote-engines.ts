// Container engines that do not share the bridge's files, as a remote one would not: each runs
// in a private mount namespace (`unshare -m`) with its own tmpfs over /tmp, /work, the home
// folder and the checkout, so that nothing the bridge has on disk is visible to it, and listens
// on loopback TCP, which the product calls remote (endpoint.ts) exactly as it would another
// machine. A podman service (`podman system service tcp://...`), and a second dockerd with TLS
// and certificates made here with openssl, its data, exec root and pid file in that tmpfs (gone
// with the namespace), never a bridge network. Needs root (mount namespaces, dockerd).
import { execa, type ResultPromise } from 'execa';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from './wait.ts';

export interface RemoteEngine {
  /** What the bridge's environment adds to reach the engine (CONTAINER_HOST, or DOCKER_HOST with TLS). */
  env: Record<string, string>;
  /** Runs the runtime's CLI against the engine. */
  cli: (args: string[]) => Promise<{ exitCode: number | undefined; stdout: string; stderr: string }>;
  log: () => string;
  stop: () => Promise<void>;
}

/** Why the remote engines cannot run here, or undefined when they can. */
export async function remoteEnginesUnavailable(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'a private mount namespace and a second dockerd need root';
  const unshare = await execa('unshare', ['-m', 'true'], { reject: false });
  if (unshare.exitCode !== 0) return `unshare -m does not work here: ${String(unshare.stderr).trim()}`;
  return undefined;
}

/** A TCP port on loopback that nothing listens on (now). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (!address || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** Folders the engine must not see: the bridge's temporary files, the checkout, the home folder. */
function hidden(): string[] {
  return [...new Set(['/tmp', tmpdir(), '/work', process.cwd(), homedir()])];
}

/**
 * `command` in a new mount namespace whose /mnt is a private tmpfs holding `files` (name to
 * content), with every hidden folder covered by an empty tmpfs; `command` is run by exec, so
 * ending the process ends the engine.
 */
function isolated(
  files: Record<string, string>,
  command: string[],
): { process: ResultPromise<{ reject: false; all: true }>; log: () => string; exited: () => boolean } {
  const script = [
    'set -e',
    'mount -t tmpfs -o mode=0700 cem-remote-engine /mnt',
    // The files come in the environment: the folders they were in are hidden next.
    ...Object.keys(files).map((name, i) => `printf '%s' "$CEM_FILE_${i}" > /mnt/${name}`),
    ...hidden().map((dir) => `[ ! -d '${dir}' ] || mount -t tmpfs -o size=16m cem-hidden '${dir}'`),
    // The engine's temp folder is its machine's default, not a folder of the tests' (hidden now).
    'unset TMPDIR',
    'cd /mnt',
    'exec "$@"',
  ].join('\n');
  const env = Object.fromEntries(Object.values(files).map((content, i) => [`CEM_FILE_${i}`, content]));
  const child = execa('unshare', ['-m', '--propagation', 'private', 'sh', '-c', script, 'sh', ...command], {
    reject: false,
    all: true,
    env,
  });
  let log = '';
  child.all?.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-20_000)));
  let ended = false;
  void child.then(() => (ended = true));
  return { process: child, log: () => log, exited: () => ended };
}

async function stopped(engine: { process: ResultPromise<{ reject: false; all: true }>; exited: () => boolean }): Promise<void> {
  const child = engine.process;
  if (engine.exited()) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await child;
  clearTimeout(timer);
}

/** A podman service on loopback TCP in its own mount namespace (this machine's image storage, none of its files). */
export async function startRemotePodman(): Promise<RemoteEngine> {
  const port = await freePort();
  const conf = process.env.CONTAINERS_CONF ? (await execa('cat', [process.env.CONTAINERS_CONF])).stdout : '';
  const engine = isolated({ 'containers.conf': conf }, [
    'env',
    'CONTAINERS_CONF=/mnt/containers.conf',
    'podman',
    'system',
    'service',
    '--time=0',
    `tcp://127.0.0.1:${port}`,
  ]);
  const env = { CONTAINER_HOST: `tcp://127.0.0.1:${port}` };
  const cli = async (args: string[]) => {
    const out = await execa('podman', args, { reject: false, env: { ...process.env, ...env } });
    return { exitCode: out.exitCode, stdout: String(out.stdout), stderr: String(out.stderr) };
  };
  try {
    await until('the podman service on loopback TCP to answer', async () => {
      if (engine.exited()) throw new Error(`the podman service exited: ${engine.log()}`);
      return (await cli(['version'])).exitCode === 0;
    });
  } catch (error) {
    await stopped(engine);
    throw error;
  }
  return { env, cli, log: engine.log, stop: () => stopped(engine) };
}

/** A CA, a server certificate for 127.0.0.1 and a client certificate, made with openssl in `dir`. */
async function makeCertificates(dir: string): Promise<void> {
  const openssl = (...args: string[]) => execa('openssl', args, { cwd: dir });
  await openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=cem-test-ca',
    '-keyout',
    'ca-key.pem',
    '-out',
    'ca.pem',
  );
  await writeFile(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  await writeFile(join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\n');
  for (const [name, subject] of [
    ['server', '/CN=127.0.0.1'],
    ['client', '/CN=cem-test-client'],
  ] as const) {
    await openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', subject, '-keyout', `${name}-key.pem`, '-out', `${name}.csr`);
    await openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca-key.pem',
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}-cert.pem`,
    );
  }
  // Where DOCKER_CERT_PATH expects the client's files.
  await execa('cp', [join(dir, 'client-cert.pem'), join(dir, 'cert.pem')]);
  await execa('cp', [join(dir, 'client-key.pem'), join(dir, 'key.pem')]);
}

/**
 * A second dockerd on loopback TCP with TLS (verified both ways), in its own mount namespace,
 * its storage in that namespace's tmpfs; `image` is copied into it (docker save | docker load).
 */
export async function startRemoteDocker(image: string): Promise<RemoteEngine> {
  const certs = await mkdtemp(join(tmpdir(), 'cem-docker-tls-'));
  await makeCertificates(certs);
  const read = async (name: string) => (await execa('cat', [join(certs, name)])).stdout + '\n';
  const port = await freePort();
  const engine = isolated(
    {
      'ca.pem': await read('ca.pem'),
      'server-cert.pem': await read('server-cert.pem'),
      'server-key.pem': await read('server-key.pem'),
      'daemon.json': '{}',
    },
    [
      'dockerd',
      '--config-file=/mnt/daemon.json',
      `--host=tcp://127.0.0.1:${port}`,
      '--tlsverify',
      '--tlscacert=/mnt/ca.pem',
      '--tlscert=/mnt/server-cert.pem',
      '--tlskey=/mnt/server-key.pem',
      '--data-root=/mnt/data',
      '--exec-root=/mnt/exec',
      '--pidfile=/mnt/docker.pid',
      // Never a bridge network: nothing routes to a private address range.
      '--bridge=none',
      '--iptables=false',
      '--ip-forward=false',
      '--ip-masq=false',
    ],
  );
  const env = { DOCKER_HOST: `tcp://127.0.0.1:${port}`, DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: certs };
  const cli = async (args: string[]) => {
    const out = await execa('docker', args, { reject: false, env: { ...process.env, ...env } });
    return { exitCode: out.exitCode, stdout: String(out.stdout), stderr: String(out.stderr) };
  };
  const stop = async () => {
    await stopped(engine);
    await execa('rm', ['-rf', certs], { reject: false });
  };
  try {
    await until(
      'the second dockerd on loopback TCP to answer',
      async () => {
        if (engine.exited()) throw new Error(`dockerd exited: ${engine.log()}`);
        return (await cli(['info', '--format', '{{.ServerVersion}}'])).exitCode === 0;
      },
      60_000,
    );
    // The image comes from this machine's own dockerd, as a registry would give it.
    const save = execa('docker', ['save', image], { buffer: false, env: { ...process.env, DOCKER_HOST: '' } });
    const load = execa('docker', ['load'], { reject: false, env: { ...process.env, ...env } });
    save.stdout?.pipe(load.stdin!);
    const [loaded] = await Promise.all([load, save]);
    if (loaded.exitCode !== 0) throw new Error(`docker load failed: ${String(loaded.stderr)}`);
  } catch (error) {
    await stop();
    throw error;
  }
  return { env, cli, log: engine.log, stop };
}

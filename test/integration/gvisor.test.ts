// sandbox.ociRuntime "runsc": sandboxes in gVisor's user-space kernel, with the same hardening and
// no network, on podman, and on docker where its daemon has runsc registered (else docker's check
// says how to register it). doctor, the listing and the run log name the tier.
import assert from 'node:assert/strict';
import { execa } from 'execa';
import { createServer, type AddressInfo } from 'node:net';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { RuntimeName } from '../../src/config/schema.ts';
import { checkRuntime } from '../../src/sandbox/engines/detect.ts';
import { SessionManager } from '../../src/sandbox/sessions/manager.ts';
import { startBridge, structured, tempDir, textOf } from '../helpers/bridge.ts';
import { testRuntimes, testSandbox } from '../helpers/env.ts';

/** Whether the docker daemon has runsc registered (scripts/dev-env.sh registers it when it starts dockerd). */
async function dockerHasRunsc(): Promise<boolean> {
  const info = await execa('docker', ['info', '--format', '{{json .Runtimes}}'], { reject: false });
  return info.exitCode === 0 && Object.hasOwn(JSON.parse(info.stdout || '{}') as object, 'runsc');
}

const gvisor = (runtime: RuntimeName) => testSandbox(runtime, { ociRuntime: 'runsc', prewarm: false });

for (const runtime of testRuntimes()) {
  describe(`gVisor on ${runtime}`, () => {
    let registered = true;
    let sandbox: SessionManager;
    before(async () => {
      if (runtime === 'docker') registered = await dockerHasRunsc();
      sandbox = new SessionManager(gvisor(runtime));
    });
    after(async () => {
      await sandbox.close();
    });

    test('a runsc the runtime cannot use is a failed check with its fix, and no start is tried', async () => {
      // A path nothing installs nor registers: podman cannot find it, docker's daemon has not registered it.
      const status = await checkRuntime(runtime, testSandbox(runtime, { ociRuntime: '/opt/cem-test-absent/runsc' }));
      assert.equal(status.state, 'start-failed');
      assert.equal(status.checks.find((c) => c.name === 'oci-runtime')?.ok, false);
      assert.equal(
        status.checks.some((c) => c.name === 'start'),
        false,
      );
      if (runtime === 'docker') {
        assert.match(
          status.problems.join('\n'),
          /^runsc is not registered with the docker daemon: add it to daemon\.json \(\{"runtimes": \{"runsc": \{"path": "\/opt\/cem-test-absent\/runsc", "runtimeArgs": \["--network=none"\]\}\}\}\), then reload the daemon/,
        );
      } else {
        assert.match(
          status.problems.join('\n'),
          /^sandbox\.ociRuntime is "\/opt\/cem-test-absent\/runsc", but podman cannot find it: install it \(Debian\/Ubuntu: `sudo apt-get install runsc`/,
        );
        assert.deepEqual(
          status.fixes.map((f) => f.command),
          ['sudo apt-get install runsc'],
        );
      }
    });

    test("code runs, and in gVisor's kernel: its log says so, and /proc/version is not the host's", async (t) => {
      if (!registered) return t.skip('runsc is not registered with this docker daemon');
      const result = await sandbox.execute(
        [
          'import ctypes, json',
          'libc = ctypes.CDLL(None, use_errno=True)',
          'buf = ctypes.create_string_buffer(8192)',
          'n = libc.klogctl(3, buf, len(buf))',
          'print(6 * 7)',
          'print(json.dumps([buf.raw[:max(n, 0)].decode(errors="replace"), open("/proc/version").read()]))',
        ].join('\n'),
      );
      assert.equal(result.status, 'ok', JSON.stringify(result.error));
      const [answer, facts] = result.stdout.split('\n');
      assert.equal(answer, '42');
      const [log, version] = JSON.parse(facts ?? '') as [string, string];
      assert.match(log, /Starting gVisor/);
      assert.notEqual(version.trim(), (await readFile('/proc/version', 'utf8')).trim());
    });

    test('there is no network: loopback only, no route, a host port unreachable', async (t) => {
      if (!registered) return t.skip('runsc is not registered with this docker daemon');
      const server = createServer((socket) => socket.destroy());
      let connections = 0;
      server.on('connection', () => connections++);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const port = (server.address() as AddressInfo).port;
      try {
        const result = await sandbox.execute(
          [
            'import socket',
            'names = sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:])',
            'def reach(host):',
            '    try:',
            `        socket.create_connection((host, ${port}), timeout=2)`,
            '        return "connected"',
            '    except OSError as e:',
            '        return type(e).__name__',
            'routes = open("/proc/net/route").read().strip().splitlines()[1:]',
            '(names, reach("127.0.0.1"), reach("10.255.255.1") != "connected", routes)',
          ].join('\n'),
        );
        assert.equal(result.value, "(['lo'], 'ConnectionRefusedError', True, [])", JSON.stringify(result.error));
        assert.equal(connections, 0);
      } finally {
        server.close();
      }
    });

    test('the hardening holds: read-only root, user 65534, no capabilities, no new privileges, limits', async (t) => {
      if (!registered) return t.skip('runsc is not registered with this docker daemon');
      const result = await sandbox.execute(
        [
          'import ctypes, os, resource',
          'def attempt(f):',
          '    try:',
          '        f(); return "ok"',
          '    except OSError as e:',
          '        return e.strerror',
          'status = dict(l.split(":\\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\\t" in l)',
          'no_new_privs = ctypes.CDLL(None).prctl(39, 0, 0, 0, 0)',
          'root = attempt(lambda: open("/var/tmp/x", "w"))',
          'work = attempt(lambda: open("/work/x", "w"))',
          'setuid = attempt(lambda: os.setuid(0))',
          '(os.getuid(), os.getgid(), status["CapEff"].strip(), no_new_privs, root, work, setuid, resource.getrlimit(resource.RLIMIT_NOFILE))',
        ].join('\n'),
      );
      assert.equal(
        result.value,
        "(65534, 65534, '0000000000000000', 1, 'Read-only file system', 'ok', 'Operation not permitted', (1024, 1024))",
        JSON.stringify(result.error),
      );
    });

    test('doctor, the listing and the run log name the gVisor tier', async (t) => {
      if (!registered) return t.skip('runsc is not registered with this docker daemon');
      const dir = await tempDir('cem-gvisor-');
      const config = join(dir, 'config.json');
      await writeFile(config, JSON.stringify({ stateDir: join(dir, 'state'), sandbox: gvisor(runtime) }));
      const doctor = await execa(process.execPath, ['dist/cli.js', 'doctor', '--config', config], { reject: false });
      assert.match(doctor.stdout, new RegExp(`^Sandbox: ready with ${runtime} in gVisor \\(runsc\\)`), doctor.stdout);
      assert.match(doctor.stdout, /ok {3}OCI runtime \(sandbox\.ociRuntime\): .*runsc.*: gVisor, a user-space kernel/);
      assert.match(doctor.stdout, /ok {3}hardened sandbox starts/);
      const bridge = await startBridge({ sandbox: gvisor(runtime) });
      try {
        const [tool] = (await bridge.client.listTools()).tools;
        assert.match(tool?.description ?? '', /^Python 3 gVisor sandbox/);
        const result = await bridge.call('print("in gVisor")');
        assert.equal(structured(result).status, 'ok', textOf(result));
        const log = await readFile(join(bridge.stateDir, 'runs.jsonl'), 'utf8');
        assert.match(log, new RegExp(`"type":"run-end".*"sandbox":\\{"runtime":"${runtime}","isolation":"gVisor","ociRuntime":"runsc"\\}`));
      } finally {
        await bridge.close();
      }
    });
  });
}

// Sandboxes apart from each other. Every sandbox used to run as host uid 65534, so one that
// reached another's processes (a /proc mount) could read their environment or signal them.
// Against real podman and docker: two sessions of the real bridge and their kernels' host uids;
// an attacker container with the sandbox's own run arguments plus the host's /proc mounted
// read-only, reading the other session's /proc/<pid>/environ; the same with the user namespace
// option off (what every sandbox got before); and what doctor says on each runtime.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { execa } from 'execa';
import { after, before, describe, test } from 'node:test';
import type { RuntimeName, SandboxConfig } from '../../src/config/schema.ts';
import { OWNER } from '../../src/sandbox/container/kernel-container.ts';
import { SessionManager } from '../../src/sandbox/sessions/manager.ts';
import { BOOTSTRAP, removeArgs, runArgs } from '../../src/sandbox/engines/commands.ts';
import { checkRuntime, type RuntimeStatus } from '../../src/sandbox/engines/detect.ts';
import { reportLines } from '../../src/sandbox/engines/report-text.ts';
import { startBridge, structured, type BridgeHandle } from '../helpers/bridge.ts';
import { testRuntimes, testSandbox } from '../helpers/env.ts';
import { writeScript } from '../helpers/script-file.ts';

/** Reads each pid's environ under the host's /proc: `read:<start>` or `denied:<errno>`, as JSON. */
const ATTACK = (pids: number[]) => `
import json, os
out = {}
for pid in ${JSON.stringify(pids)}:
    try:
        out[pid] = 'read:' + open('/hostproc/%d/environ' % pid, 'rb').read().decode('utf-8', 'replace')
    except OSError as e:
        out[pid] = 'denied:%d' % e.errno
print(json.dumps(out))
`;

/** The sandbox's run arguments with other code in place of the kernel, and extra options first. */
function sandboxArgs(
  runtime: RuntimeName,
  config: SandboxConfig,
  status: RuntimeStatus,
  ownUserNamespace: boolean,
  code: string,
  extra: string[] = [],
): { name: string; args: string[] } {
  const name = `cem-isolation-${process.pid}-${randomBytes(3).toString('hex')}`;
  const image = status.image ? { ...config, image: status.image } : config;
  const args = runArgs(runtime, image, {
    name,
    owner: OWNER,
    session: 'isolation-test',
    ownUserNamespace,
    ...(status.ociRuntime ? { ociRuntime: status.ociRuntime } : {}),
  });
  assert.equal(args.at(-1), BOOTSTRAP, 'run arguments end with the kernel bootstrap');
  return { name, args: ['run', ...extra, ...args.slice(1, -3), '-c', code] };
}

/** What a sandbox with the host's /proc mounted read-only at /hostproc reads of these pids. */
async function attack(
  runtime: RuntimeName,
  config: SandboxConfig,
  status: RuntimeStatus,
  ownUserNamespace: boolean,
  pids: number[],
): Promise<Record<string, string>> {
  const { args } = sandboxArgs(runtime, config, status, ownUserNamespace, ATTACK(pids), ['-v', '/proc:/hostproc:ro']);
  const out = await execa(runtime, args, { input: '', reject: false, timeout: 60_000 });
  assert.equal(out.exitCode, 0, out.stderr);
  return JSON.parse(out.stdout) as Record<string, string>;
}

/** The host pid of a container's first process and the host uid it runs as. */
async function hostProcess(runtime: RuntimeName, container: string): Promise<{ pid: number; uid: number }> {
  const pid = Number((await execa(runtime, ['inspect', '--format', '{{.State.Pid}}', container])).stdout.trim());
  const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return { pid, uid };
}

/** Host pids of every process in a container. */
async function hostPids(runtime: RuntimeName, container: string): Promise<number[]> {
  const args = runtime === 'podman' ? ['top', container, 'hpid'] : ['top', container, '-o', 'pid'];
  const lines = (await execa(runtime, args)).stdout.trim().split('\n').slice(1);
  return lines.map((line) => Number(line.trim())).filter((pid) => pid > 0);
}

/** A session's container (its hostname is the container's short id) and its uid inside. */
async function sessionContainer(bridge: BridgeHandle, session: string): Promise<{ id: string; uid: number }> {
  const result = await bridge.call('import os, socket\n[socket.gethostname(), os.getuid()]', { session });
  const value = String(structured(result).value ?? '');
  const match = /^\['([0-9a-f]{12})', (\d+)\]$/.exec(value);
  assert.ok(match, `unexpected ${value}: ${JSON.stringify(structured(result))}`);
  return { id: match[1]!, uid: Number(match[2]) };
}

const readable = (results: Record<string, string>) => Object.values(results).filter((r) => r.startsWith('read:'));

for (const runtime of testRuntimes()) {
  describe(`sandboxes apart from each other on ${runtime}`, () => {
    const config = testSandbox(runtime);
    let status: RuntimeStatus;
    let bridge: BridgeHandle;
    before(async () => {
      status = await checkRuntime(runtime, config);
      bridge = await startBridge({ sandbox: config });
    });
    after(() => bridge.close());

    test('doctor says which isolation between sandboxes is in force, and the sandbox runs either way', async () => {
      assert.equal(status.state, 'ready', status.problems.join(' '));
      const check = status.checks.find((c) => c.name === 'isolation');
      const text = reportLines({ image: config.image, chosen: status, runtimes: [status] }).join('\n');
      if (runtime === 'podman') {
        // This machine gives podman ids for it (scripts/dev-env.sh): each sandbox its own namespace.
        assert.equal(status.ownUserNamespace, true, text);
        assert.deepEqual(check, {
          name: 'isolation',
          ok: true,
          detail: 'each sandbox in its own user namespace (--userns=auto): no two share a host uid',
        });
        assert.match(text, /ok {3}sandboxes apart from each other: each sandbox in its own user namespace/);
        return;
      }
      // Docker has no namespace per container: the daemon here runs without userns-remap.
      const options = JSON.parse((await execa('docker', ['info', '--format', '{{json .SecurityOptions}}'])).stdout) as string[];
      assert.equal(status.ownUserNamespace, false);
      assert.equal(check?.ok, false);
      if (options.some((o) => o.includes('name=userns')))
        assert.match(check?.detail ?? '', /userns-remap maps every container to the same ids/);
      else
        assert.match(
          text,
          /FAIL sandboxes apart from each other: sandboxes share uid 65534 on the host: Docker runs containers in the host's user namespace/,
        );
      assert.match(text, /fix: Use Podman, which runs each sandbox in its own user namespace: setting sandbox\.runtime/);
    });

    test("one session cannot read another's /proc/<pid>/environ, even with /proc reachable", async () => {
      const a = await sessionContainer(bridge, 'a');
      const b = await sessionContainer(bridge, 'b');
      assert.notEqual(a.id, b.id);
      assert.deepEqual([a.uid, b.uid], [65534, 65534], 'the same user inside either way');
      const [hostA, hostB] = await Promise.all([hostProcess(runtime, a.id), hostProcess(runtime, b.id)]);
      const pidsB = await hostPids(runtime, b.id);
      assert.ok(pidsB.includes(hostB.pid) && pidsB.length >= 2, `B's processes: ${pidsB.join(' ')}`);
      const results = await attack(runtime, config, status, status.ownUserNamespace === true, pidsB);
      // Podman gives each sandbox a namespace of its own on this machine (the test above says so).
      if (runtime === 'podman') {
        assert.notEqual(hostA.uid, hostB.uid, 'A and B run as different host uids');
        assert.ok(hostA.uid !== 65534 && hostB.uid !== 65534, `host uids ${hostA.uid}, ${hostB.uid}`);
        assert.deepEqual(
          Object.values(results),
          pidsB.map(() => 'denied:13'),
          JSON.stringify(results),
        );
      } else {
        // What doctor reports for this runtime is what holds: one uid, B's kernel environment readable.
        assert.deepEqual([hostA.uid, hostB.uid], [65534, 65534]);
        assert.match(readable(results).join('\n'), /HOME=\/work/, JSON.stringify(results));
      }
    });

    test(
      'with the user namespace option off, as every sandbox ran before, the same attack reads the environment',
      { skip: runtime !== 'podman' && 'docker has no option' },
      async () => {
        const target = sandboxArgs(runtime, config, status, false, "import sys; print('up', flush=True); sys.stdin.read()");
        const child = execa(runtime, target.args, { stdin: 'pipe', reject: false });
        try {
          const lines = createInterface({ input: child.stdout });
          await new Promise<void>((resolve, reject) => {
            lines.once('line', () => resolve());
            void child.then((r) => reject(new Error(`the target exited: ${r.stderr}`)));
          });
          const host = await hostProcess(runtime, target.name);
          assert.equal(host.uid, 65534);
          const results = await attack(runtime, config, status, false, [host.pid]);
          assert.match(results[host.pid] ?? '', /^read:.*HOME=\/work/s);
        } finally {
          child.stdin?.end();
          await execa(runtime, removeArgs(runtime, [target.name]), { reject: false });
          await child;
        }
      },
    );

    // Podman 4.3 estimating the namespace's size from the image deadlocked here within a round,
    // and then every podman command on the host waited (hence the explicit size in runArgs).
    test(
      'many sandboxes started while others end, each in its own namespace, never wedge podman',
      { skip: runtime !== 'podman' && 'podman only', timeout: 240_000 },
      async () => {
        const sessions = new SessionManager(testSandbox(runtime, { maxSessions: 24, prewarm: false }));
        try {
          let closing: Promise<boolean>[] = [];
          for (let round = 0; round < 3; round++) {
            const names = [0, 1, 2, 3, 4, 5].map((i) => `burst-${round}-${i}`);
            const results = await Promise.all(names.map((session) => sessions.execute('import os\nos.getuid()', { session })));
            assert.deepEqual(
              results.map((r) => `${r.status} ${r.value}`),
              names.map(() => 'ok 65534'),
            );
            await Promise.all(closing);
            // The next round starts while these end (their containers' cleanup runs meanwhile).
            closing = names.map((name) => sessions.closeSession(name));
          }
          await Promise.all(closing);
        } finally {
          await sessions.close();
        }
        const ps = await execa(runtime, ['ps', '--format', '{{.ID}}'], { timeout: 20_000, reject: false });
        assert.equal(ps.exitCode, 0, `podman answers: ${ps.stderr}`);
      },
    );
  });
}

describe(
  'podman without ids for --userns=auto',
  { skip: (process.getuid?.() !== 0 || !testRuntimes().includes('podman')) && 'needs root and podman' },
  () => {
    let dir: string;
    let command: string;
    before(async () => {
      dir = await mkdtemp(join(tmpdir(), 'cem-nosubuid-'));
      // /etc/subuid and /etc/subgid without the user `containers`, in a mount namespace of podman's own.
      const hide = `for f in subuid subgid; do grep -v "^containers:" /etc/$f > "${dir}/$f"; mount --bind "${dir}/$f" /etc/$f || exit 1; done`;
      command = writeScript(dir, 'podman', [`exec unshare -m sh -c '${hide}; exec podman "$@"' podman "$@"`]);
    });
    after(() => rm(dir, { recursive: true, force: true }));

    test('doctor reports the shared uid with its fix, and sessions still run', async () => {
      const config = testSandbox('podman', { prewarm: false });
      const status = await checkRuntime('podman', config, { commands: { podman: command } });
      assert.equal(status.state, 'ready', status.problems.join(' '));
      assert.equal(status.ownUserNamespace, false);
      const text = reportLines({ image: config.image, chosen: status, runtimes: [status] }).join('\n');
      assert.match(
        text,
        /FAIL sandboxes apart from each other: sandboxes share uid 65534 on the host: podman cannot give each its own user namespace \(.*no subuid ranges found for user "containers"/,
      );
      assert.match(
        text,
        /fix: Give Podman a range of ids for sandboxes \(as root\): echo containers:2147483647:2147483648 \| sudo tee -a \/etc\/subuid \/etc\/subgid/,
      );
      const sessions = new SessionManager(config, { detect: { commands: { podman: command } } });
      try {
        const result = await sessions.execute('import os\nopen("/proc/self/uid_map").read().split()');
        assert.equal(result.status, 'ok', JSON.stringify(result.error));
        assert.equal(result.value, "['0', '0', '4294967295']", 'the host user namespace');
      } finally {
        await sessions.close();
      }
    });
  },
);

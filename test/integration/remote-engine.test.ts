// The integration suite's core on engines that do not share the bridge's files, reached as a
// remote one is: a podman service and a second dockerd (TLS, certificates made by the test),
// each in a private mount namespace that hides /tmp, /work, the home folder and the checkout,
// on loopback TCP (test/helpers/remote-engines.ts). Through the real bridge: state across runs,
// a proxied call, the configured limits (not clamped to the bridge's), files out, a plot
// (podman), the workspace as a snapshot (readable, read-only, .git and ignored files left out,
// taken again on reset and by refresh_workspace(), refused above its cap), a timeout, an image
// build whose context the engine gets over the wire (podman), and nothing left on the engine
// after the bridge closes.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { execa } from 'execa';
import { mkdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { FIXTURE, startBridge, structured, tempDir, textOf, type BridgeHandle } from '../helpers/bridge.ts';
import { TEST_DATA_IMAGE, TEST_IMAGE, testRuntimes } from '../helpers/env.ts';
import { remoteEnginesUnavailable, startRemoteDocker, startRemotePodman, type RemoteEngine } from '../helpers/remote-engines.ts';
import { servePipIndex } from '../helpers/pip-index.ts';
import { until } from '../helpers/wait.ts';

const unavailable = await remoteEnginesUnavailable();
const value = (result: CallToolResult) => String(structured(result).value);
const ok = (result: CallToolResult, bridge: BridgeHandle) =>
  assert.equal(structured(result).status, 'ok', textOf(result) + bridge.stderr());

/** A git repository with a tracked file, an ignored one and a nested folder. */
async function project(): Promise<string> {
  const dir = await tempDir('cem-remote-ws-');
  mkdirSync(join(dir, 'docs'));
  writeFileSync(join(dir, 'notes.txt'), 'first version\n');
  writeFileSync(join(dir, 'docs', 'guide.md'), '# guide\n');
  writeFileSync(join(dir, '.gitignore'), 'secret.env\n');
  writeFileSync(join(dir, 'secret.env'), 'TOKEN=1\n');
  const git = (...args: string[]) => execFileSync('git', ['-C', dir, ...args]);
  git('init', '-q');
  git('add', '.');
  git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'first');
  return dir;
}

const WORKSPACE_PROBE = `
import os
out = {'notes': open('/workspace/notes.txt').read(), 'guide': open('/workspace/docs/guide.md').read()}
out['git'] = os.path.exists('/workspace/.git')
out['ignored'] = os.path.exists('/workspace/secret.env')
try:
    open('/workspace/notes.txt', 'w').write('changed')
    out['write'] = 'written'
except OSError as e:
    out['write'] = type(e).__name__
out
`;

const READ_LIMITS = 'import resource\nprint(*resource.getrlimit(resource.RLIMIT_NOFILE), *resource.getrlimit(resource.RLIMIT_NPROC))';

const engines: Array<{ runtime: 'podman' | 'docker'; start: () => Promise<RemoteEngine> }> = [
  { runtime: 'podman', start: startRemotePodman },
  { runtime: 'docker', start: () => startRemoteDocker(TEST_IMAGE) },
];

for (const { runtime, start } of engines) {
  const skip = unavailable ?? (!testRuntimes().includes(runtime) && `${runtime} is not among the test runtimes`);
  describe(`${runtime} as a remote engine`, { skip }, () => {
    let engine: RemoteEngine;
    let bridge: BridgeHandle;
    let dir: string;
    const sandbox = () => ({ runtime, image: TEST_IMAGE, memory: '256m', timeoutSeconds: 20, interruptGraceSeconds: 2, prewarm: false });
    before(async () => {
      engine = await start();
      dir = await project();
      bridge = await startBridge(
        {
          sandbox: { ...sandbox(), workspace: { path: dir, access: 'read-only' } },
          servers: { fixture: { command: process.execPath, args: [FIXTURE] } },
        },
        engine.env,
        [],
        // The bridge's open-file hard limit below the sandbox's 1024: a local engine's sandbox
        // would be clamped to it, a remote engine's is not.
        ['prlimit', '--nofile=512:512', '--'],
      );
    });
    after(async () => {
      await bridge?.close();
      await engine?.stop();
    });

    test("the engine does not see the bridge's files: a mount of the workspace folder is empty there", async () => {
      const listed = await engine.cli(['run', '--rm', '--network', 'none', '-v', `${dir}:/x:ro`, TEST_IMAGE, 'ls', '-a', '/x']);
      assert.doesNotMatch(listed.stdout, /notes\.txt/, listed.stdout + listed.stderr);
    });

    test('doctor names the engine remote and the workspace a snapshot', async () => {
      const file = join(await tempDir('cem-remote-doctor-'), 'config.json');
      writeFileSync(
        file,
        JSON.stringify({ sandbox: { backend: 'container', ...sandbox(), workspace: { path: dir, access: 'read-only' } } }),
      );
      const doctor = await execa(process.execPath, ['dist/cli.js', 'doctor', '--config', file], {
        reject: false,
        env: { ...process.env, ...engine.env },
      });
      const report = doctor.stdout + doctor.stderr;
      assert.match(report, /ok {3}engine endpoint: remote engine tcp:\/\/127\.0\.0\.1:\d+ \((CONTAINER_HOST|DOCKER_HOST, TLS)\)/);
      assert.match(report, /workspace.*copied in, not mounted .*: snapshot of .*cem-remote-ws-\w+ \(3 files, 0\.0 MB\), taken at /);
      assert.match(report, new RegExp(`Sandbox: ready with ${runtime}`));
    });

    test("the sandbox gets the configured limits, not clamped to the bridge's own hard limit", async () => {
      const result = await bridge.call(READ_LIMITS);
      ok(result, bridge);
      assert.equal(structured(result).stdout, '1024 1024 4096 4096\n');
    });

    test('state lasts across runs, and a proxied call is served', async () => {
      ok(await bridge.call('x = 41'), bridge);
      assert.equal(value(await bridge.call('x + 1')), '42');
      const call = await bridge.call('await mcp_fixture.echo(message="over the wire")');
      ok(call, bridge);
      assert.equal(value(call), "'over the wire'");
    });

    test('files out come back over the channel', async () => {
      const result = await bridge.call('open("/work/out/report.txt", "w").write("rows: 3\\n")');
      ok(result, bridge);
      const files = (structured(result).files ?? []) as Array<{ path: string; text?: string }>;
      assert.deepEqual(
        files.map((f) => [f.path, f.text]),
        [['/work/out/report.txt', 'rows: 3\n']],
      );
    });

    test('the workspace is a read-only snapshot without .git or ignored files, taken again on reset and on demand', async () => {
      const first = await bridge.call(WORKSPACE_PROBE);
      ok(first, bridge);
      assert.equal(
        value(first),
        "{'notes': 'first version\\n', 'guide': '# guide\\n', 'git': False, 'ignored': False, 'write': 'PermissionError'}",
      );
      writeFileSync(join(dir, 'notes.txt'), 'second version\n');
      // Not yet: it is a copy.
      assert.equal(value(await bridge.call('open("/workspace/notes.txt").read()')), "'first version\\n'");
      const reset = await bridge.call('open("/workspace/notes.txt").read()', { reset: true });
      assert.equal(value(reset), "'second version\\n'");
      writeFileSync(join(dir, 'notes.txt'), 'third version\n');
      writeFileSync(join(dir, 'added.txt'), 'new\n');
      const refreshed = await bridge.call(
        'import os\ninfo = refresh_workspace()\n(info["mode"], info["files"], open("/workspace/notes.txt").read(), sorted(os.listdir("/workspace")))',
      );
      ok(refreshed, bridge);
      assert.equal(value(refreshed), "('snapshot', 4, 'third version\\n', ['.gitignore', 'added.txt', 'docs', 'notes.txt'])");
      // The model is told it is a copy, and how to take it again.
      const summary = await bridge.call('from mcp import runtime\nprint(runtime.capability_summary())');
      assert.match(
        String(structured(summary).stdout),
        /\/workspace is a read-only copy of the user's files \(snapshot of .*cem-remote-ws-\w+ \(4 files, 0\.0 MB\), taken at [\dT:Z-]+\); refresh_workspace\(\) takes it again\./,
      );
    });

    test('a plot comes back as an image over the channel', async (t) => {
      // The data image (with matplotlib, 1.5 GB) is in the storage the podman service shares;
      // copying it into the second dockerd would take longer than the rest of the suite.
      if (runtime === 'docker') return t.skip('the data image is not loaded into the second dockerd');
      const plots = await startBridge(
        { sandbox: { ...sandbox(), image: TEST_DATA_IMAGE, memory: '512m', timeoutSeconds: 60 } },
        engine.env,
      );
      try {
        const result = await plots.call('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()');
        ok(result, plots);
        const images = result.content.filter((c) => c.type === 'image');
        assert.equal(images.length, 1, textOf(result));
        assert.equal(images[0]?.mimeType, 'image/png');
      } finally {
        await plots.close();
      }
    });

    test('a run over its time limit times out, and the session goes on', async () => {
      const result = await bridge.call('while True: pass', { timeout: 2 });
      assert.equal(structured(result).status, 'timeout', textOf(result));
      assert.equal(value(await bridge.call('6 * 7')), '42');
    });

    test('above the cap the snapshot is refused, saying the size, the cap and the key, and the run goes on', async () => {
      const big = await tempDir('cem-remote-big-');
      writeFileSync(join(big, 'data.bin'), Buffer.alloc(2 * 1024 * 1024 + 1));
      const capped = await startBridge(
        { sandbox: { ...sandbox(), workspace: { path: big, access: 'read-only', snapshotMaxMB: 1 } } },
        engine.env,
      );
      try {
        const result = await capped.call('import os\nsorted(os.listdir("/workspace"))');
        ok(result, capped);
        assert.equal(value(result), '[]');
        assert.match(
          String(structured(result).stderr),
          /The workspace snapshot is refused: .* hold 2\.0 MB in 1 file, over the cap of 1\.0 MB \(sandbox\.workspace\.snapshotMaxMB\), so runs go on without \/workspace/,
        );
      } finally {
        await capped.close();
      }
    });

    test('an image build sends its context to the engine: build-image from a loopback index, then a run imports the package', async (t) => {
      if (runtime !== 'podman') return t.skip('the image with pip is not loaded into the second dockerd');
      const index = await servePipIndex({ 'cem-remote-built': { version: '1.0', value: 'built by the remote engine' } });
      const file = join(await tempDir('cem-remote-build-'), 'config.json');
      writeFileSync(
        file,
        JSON.stringify({
          sandbox: { backend: 'container', ...sandbox(), image: TEST_DATA_IMAGE, packages: ['cem-remote-built'], pipIndexUrl: index.url },
        }),
      );
      const cli = (args: string[]) =>
        execa(process.execPath, ['dist/cli.js', ...args], { reject: false, env: { ...process.env, ...engine.env } });
      let tag: string | undefined;
      try {
        const built = await cli(['build-image', '--config', file]);
        assert.equal(built.exitCode, 0, built.stdout + built.stderr);
        tag = /Ready: (localhost\/code-execution-mode-sandbox:[0-9a-f]{20})/.exec(built.stderr)?.[1];
        assert.ok(tag, built.stderr);
        const run = await cli(['run', '--config', file, '-c', 'import cem_remote_built\nprint(cem_remote_built.VALUE)']);
        assert.equal(run.exitCode, 0, run.stdout + run.stderr);
        assert.match(run.stdout, /built by the remote engine/);
      } finally {
        if (tag) await engine.cli(['rmi', '--force', tag]).catch(() => undefined);
        await index.close();
      }
    });

    test('nothing is left on the engine after the bridge closes', async () => {
      const pid = bridge.pid;
      ok(await bridge.call('1'), bridge);
      await bridge.close();
      const owner = `io.code-execution-mode.owner=${hostname()}/${pid}`;
      await until('the sandboxes of the closed bridge to be gone from the engine', async () => {
        const listed = await engine.cli(['ps', '-a', '--filter', `label=${owner}`, '--format', '{{.Names}}']);
        assert.equal(listed.exitCode, 0, listed.stderr);
        return listed.stdout.trim() === '';
      });
    });
  });
}

// The WebAssembly sandbox through the real bridge: chosen by sandbox.backend, or by "auto" where
// no container can run; the same Python API (proxied calls, concurrency, sessions, reset, time
// limits) and the same records; and the README's first command on a machine with no container
// engine. The process-level attacks are in wasm-kernel.test.ts.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { copyFile, link, mkdir, readFile, symlink } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { execa } from 'execa';
import { FIXTURE, startBridge, structured, tempDir, textOf, type BridgeHandle } from '../helpers/bridge.ts';
import { CUT_OFF_IMPORT, IMPORT_AGAIN } from '../helpers/half-import.ts';

const WASM = { backend: 'wasm', timeoutSeconds: 20, interruptGraceSeconds: 2 };

describe('the WebAssembly sandbox through the bridge', () => {
  let bridge: BridgeHandle;

  before(async () => {
    bridge = await startBridge({
      sandbox: WASM,
      servers: { fixture: { command: process.execPath, args: [FIXTURE], description: 'Test fixture' } },
    });
  });
  after(async () => {
    await bridge?.close();
  });

  test('the listing says WebAssembly, and that there are no subprocesses', async () => {
    const [tool] = (await bridge.client.listTools()).tools;
    assert.match(tool?.description ?? '', /^Python 3 WebAssembly sandbox, standard library only \(no pip, no network, no subprocesses\)/);
    assert.doesNotMatch(tool?.description ?? '', /workspace/i);
  });

  test('proxied tools are called from Python, three at once', async () => {
    const result = await bridge.call(
      [
        'import asyncio',
        'total = (await mcp_fixture.add(a=2, b=3))["sum"]',
        // Each call answers once all three wait at the server together (one at a time, each would answer alone).
        'met = await asyncio.gather(*[mcp_fixture.meet(count=3) for _ in range(3)])',
        '(total, [m["together"] for m in met])',
      ].join('\n'),
    );
    const view = structured(result);
    assert.equal(view.status, 'ok', textOf(result));
    assert.equal(view.value, '(5, [3, 3, 3])', 'the three calls waited at the server at the same time');
  });

  test('a tool error raises ToolError with its kind', async () => {
    const result = await bridge.call(
      'try:\n    await mcp_fixture.fail(why="x")\nexcept ToolError as e:\n    print(e.kind, "|", str(e)[:40])',
    );
    assert.match(String(structured(result).stdout), /^tool-error \| .*failed on purpose: x/);
  });

  test('a session keeps its state between calls; reset starts a fresh interpreter', async () => {
    await bridge.call('kept = 41', { session: 'w' });
    const again = await bridge.call('kept + 1', { session: 'w' });
    assert.equal(structured(again).value, '42');
    const reset = await bridge.call('"kept" in globals()', { session: 'w', reset: true });
    assert.equal(structured(reset).value, 'False');
  });

  test('a loop that never ends is stopped by the time limit, and the sandbox answers afterwards', async () => {
    const result = await bridge.call('while True:\n    pass', { timeout: 1, session: 'loop' });
    assert.equal(structured(result).status, 'timeout', textOf(result));
    const after = await bridge.call('1 + 1', { session: 'loop' });
    assert.equal(structured(after).value, '2', textOf(after));
  });

  test('an import cut off by the time limit leaves nothing half-made: the package imports whole in the next run', async () => {
    const cut = await bridge.call(CUT_OFF_IMPORT, { timeout: 1, session: 'imports' });
    assert.equal(structured(cut).status, 'timeout', textOf(cut));
    const again = await bridge.call(IMPORT_AGAIN, { session: 'imports' });
    assert.equal(structured(again).value, '[1, 2]', textOf(again));
  });

  test('the run log and the capabilities resource name the WebAssembly sandbox', async () => {
    await bridge.call('print("logged")');
    const log = await readFile(join(bridge.stateDir, 'runs.jsonl'), 'utf8');
    assert.match(log, /"type":"run-end".*"sandbox":\{"runtime":"deno","isolation":"wasm"\}/);
    const resource = await bridge.client.readResource({ uri: 'code-execution-mode://capabilities' });
    const text = resource.contents.map((c) => ('text' in c ? c.text : '')).join('');
    assert.match(text, /Sandbox: WebAssembly .*Not here: subprocesses/);
  });
});

test('auto runs in WebAssembly where no container can run, and says why; a workspace asked for is said not mounted', async () => {
  const folder = await tempDir('cem-wasm-workspace-');
  const bridge = await startBridge({
    sandbox: {
      backend: 'auto',
      podmanPath: '/nonexistent/podman',
      dockerPath: '/nonexistent/docker',
      workspace: { path: folder, access: 'read-only' },
    },
  });
  try {
    const result = await bridge.call('import sys\nsys.platform');
    assert.equal(structured(result).value, "'emscripten'", textOf(result));
    assert.match(bridge.stderr(), /sandbox: WebAssembly, since no container can run here: No container runtime can run the sandbox/);
    assert.match(bridge.stderr(), /workspace NOT mounted: the WebAssembly sandbox has no workspace folder/);
    const listed = await bridge.call('import os\nos.path.exists("/workspace")');
    assert.equal(structured(listed).value, 'False');
    const [tool] = (await bridge.client.listTools()).tools;
    assert.match(tool?.description ?? '', /^Python 3 WebAssembly sandbox/);
  } finally {
    await bridge.close();
  }
});

test("the README's first command runs as a user without root on a machine with no container engine, in WebAssembly, and says so", async (t) => {
  // The engines' CLIs are hidden in a mount namespace of its own (root makes one); the demo then
  // runs as an unprivileged user when one exists and can read this checkout, with only Node on
  // PATH and a home of its own.
  if (process.getuid?.() !== 0) return t.skip('hiding the installed container engines needs root (a mount namespace)');
  const engines = ENGINE_DIRS.flatMap((dir) => ['podman', 'docker'].map((name) => join(dir, name))).filter((file) => existsSync(file));
  const user = await unprivilegedUser();
  // The user's own copy of the checkout (the demo builds into it), with this one's node_modules.
  const home = await tempDir('cem-demo-home-');
  const checkout = join(home, 'checkout');
  await execa('sh', ['-c', `mkdir -p '${checkout}' && git ls-files -z | tar --null -T - -c | tar -x -C '${checkout}'`]);
  await symlink(resolve('node_modules'), join(checkout, 'node_modules'));
  if (user) await execa('chown', ['-R', '-h', `${user.uid}:${user.gid}`, home]);
  // The user's Node is this one, in a folder of the home it may read (this one's may be in a
  // folder closed to others, so the demo would take the machine's older Node and fetch Node 24
  // from the npm registry: tests reach no address but loopback). Put there after the chown,
  // which would otherwise give this Node's own file to the user.
  const bin = join(home, 'bin');
  await mkdir(bin);
  await link(process.execPath, join(bin, 'node')).catch(() => copyFile(process.execPath, join(bin, 'node')));
  const hide = engines.map((file) => `mount --bind /dev/null '${file}'`).join(' && ');
  const asUser = user ? `setpriv --reuid=${user.uid} --regid=${user.gid} --clear-groups ` : '';
  const result = await execa('unshare', ['--mount', 'sh', '-c', `${hide || 'true'} && exec ${asUser}bash scripts/demo.sh`], {
    cwd: checkout,
    reject: false,
    // Its temp folder in the home too: the demo keeps its run log there for the user to read.
    env: { PATH: `${bin}:/usr/bin:/bin`, HOME: home, CEM_CACHE: join(home, 'cache'), TMPDIR: home },
    extendEnv: false,
  });
  assert.equal(result.exitCode, 0, `${result.stdout}\n${result.stderr}`);
  assert.doesNotMatch(result.stderr, /installing Node 24/, 'the demo ran on the Node given, and fetched none');
  assert.match(result.stdout, /sandbox: WebAssembly/);
  assert.match(result.stdout, /relations: \[\('Ada Lovelace', 'programmed', 'Analytical Engine'\)\]/);
  assert.match(result.stderr, /sandbox: WebAssembly, since no container can run here: No container runtime can run the sandbox/);
  assert.match(result.stderr, /Sandbox: WebAssembly \(Pyodide in Deno\); for full isolation and packages, install Podman/);
  if (!user) t.diagnostic('ran as root: no unprivileged user can read node_modules here');
});

/** Where the engines' CLIs are looked for on Linux (sandbox/engines/locate.ts). */
const ENGINE_DIRS = ['/usr/local/bin', '/usr/bin', '/bin', '/snap/bin', '/home/linuxbrew/.linuxbrew/bin'];

/** The test's unprivileged user (scripts/dev-env.sh makes it), if it can read this checkout's node_modules. */
async function unprivilegedUser(): Promise<{ uid: number; gid: number } | undefined> {
  const line = (await readFile('/etc/passwd', 'utf8')).split('\n').find((l) => l.startsWith('cemrootless:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  if (!uid || !gid) return undefined;
  const readable = await execa(
    'setpriv',
    [`--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', 'test', '-r', 'node_modules/pyodide/package.json'],
    {
      reject: false,
    },
  );
  return readable.exitCode === 0 ? { uid: Number(uid), gid: Number(gid) } : undefined;
}

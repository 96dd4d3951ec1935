// The read-only workspace mount (sandbox.workspace) against real Podman and real Docker:
// readable, not writable, not executable, and absent unless asked for; several folders each at
// /workspace/<name>; system folders refused before any container starts.
import assert from 'node:assert/strict';
import { execa } from 'execa';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { checkSandbox } from '../../src/sandbox/engines/detect.ts';
import { SessionManager } from '../../src/sandbox/sessions/manager.ts';
import { TEST_IMAGE, testRuntimes, testSandbox } from '../helpers/env.ts';

const PROBE = `
import os, subprocess
out = {'data': open('/workspace/data/table.csv').read(), 'listing': sorted(os.listdir('/workspace'))}
try:
    open('/workspace/new.txt', 'w').write('x')
    out['write'] = 'written'
except OSError as e:
    out['write'] = type(e).__name__
try:
    subprocess.run(['/workspace/tool.sh'], check=True, capture_output=True)
    out['exec'] = 'ran'
except OSError as e:
    out['exec'] = type(e).__name__
out['options'] = [l.split()[3] for l in open('/proc/mounts') if l.split()[1] == '/workspace']
out
`;

for (const runtime of testRuntimes()) {
  describe(`workspace on ${runtime}`, () => {
    let dir: string;
    let mounted: SessionManager;
    let plain: SessionManager;
    before(() => {
      dir = mkdtempSync(join(tmpdir(), 'cem-ws-'));
      mkdirSync(join(dir, 'data'));
      writeFileSync(join(dir, 'data', 'table.csv'), 'a,b\n1,2\n');
      writeFileSync(join(dir, 'tool.sh'), '#!/bin/sh\necho ran\n');
      // The sandbox user (nobody) reads what everyone may read; rootless podman maps it to a sub-uid.
      chmodSync(dir, 0o755);
      chmodSync(join(dir, 'data'), 0o755);
      chmodSync(join(dir, 'data', 'table.csv'), 0o644);
      chmodSync(join(dir, 'tool.sh'), 0o755);
      mounted = new SessionManager(testSandbox(runtime, { workspace: { path: dir, access: 'read-only' }, prewarm: false }));
      plain = new SessionManager(testSandbox(runtime, { prewarm: false }));
    });
    after(async () => {
      await Promise.all([mounted.close(), plain.close()]);
      rmSync(dir, { recursive: true, force: true });
    });

    test('the folder is readable at /workspace, not writable, not executable', async () => {
      const result = await mounted.execute(PROBE);
      assert.equal(result.status, 'ok', JSON.stringify(result.error));
      const value = result.value ?? '';
      assert.match(value, /'data': 'a,b\\n1,2\\n'/);
      assert.match(value, /'listing': \['data', 'tool.sh'\]/);
      assert.match(value, /'write': '(OSError|PermissionError)'/);
      assert.match(value, /'exec': 'PermissionError'/);
      for (const option of ['ro', 'nosuid', 'nodev', 'noexec'])
        assert.match(value, new RegExp(`'options': \\['[^']*\\b${option}\\b`), `mounted ${option}`);
    });

    test('a custom state folder is refused as a workspace mount by the check and at every container start', async () => {
      const root = mkdtempSync(join(tmpdir(), 'cem-ws-state-'));
      const workspace = join(root, 'ws');
      mkdirSync(join(workspace, 'state'), { recursive: true });
      mkdirSync(join(root, 'elsewhere'));
      chmodSync(root, 0o755);
      chmodSync(workspace, 0o755);
      // The state folder's path is a link: first outside the workspace, then into it.
      const stateDir = join(root, 'state-link');
      symlinkSync(join(root, 'elsewhere'), stateDir);
      const sandbox = testSandbox(runtime, { workspace: { path: workspace, access: 'read-only' }, prewarm: false });
      const manager = new SessionManager(sandbox, { detect: { stateDir } });
      try {
        const first = await manager.execute('import os\nos.path.isdir("/workspace/state")', { session: 'before' });
        assert.equal(first.value, 'True', JSON.stringify(first.error));
        unlinkSync(stateDir);
        symlinkSync(join(workspace, 'state'), stateDir);
        const refused = await manager.execute('1', { session: 'after' }).then(
          (result) => JSON.stringify(result.error),
          (error: Error) => error.message,
        );
        assert.match(refused, /must not hold or be inside the bridge's state folder/);
        // The check (doctor, Diagnose) refuses it too when told of the state folder.
        const report = await checkSandbox(sandbox, { stateDir });
        const check = report.runtimes[0]?.checks.find((c) => c.name === 'workspace');
        assert.equal(check?.ok, false);
        assert.match(check.detail, /state folder/);
      } finally {
        await manager.close();
        rmSync(root, { recursive: true, force: true });
      }
    });

    test('nothing is at /workspace by default, nor with access "none"', async () => {
      const result = await plain.execute('import os\nos.path.exists("/workspace")');
      assert.equal(result.value, 'False');
      const none = new SessionManager(testSandbox(runtime, { workspace: { path: dir, access: 'none' }, prewarm: false }));
      try {
        assert.equal((await none.execute('import os\nos.path.exists("/workspace")')).value, 'False');
      } finally {
        await none.close();
      }
    });

    test('several folders are each readable at /workspace/<name>, none writable or executable', async () => {
      const second = mkdtempSync(join(tmpdir(), 'cem-ws-'));
      const other = join(second, 'data');
      mkdirSync(other);
      writeFileSync(join(other, 'notes.md'), '# notes\n');
      writeFileSync(join(other, 'run.sh'), '#!/bin/sh\necho ran\n');
      for (const [path, mode] of [
        [second, 0o755],
        [other, 0o755],
        [join(other, 'notes.md'), 0o644],
        [join(other, 'run.sh'), 0o755],
      ] as const)
        chmodSync(path, mode);
      // Two folders both called "data": the second gets a unique name.
      const both = new SessionManager(
        testSandbox(runtime, { workspace: { path: [join(dir, 'data'), other], access: 'read-only' }, prewarm: false }),
      );
      try {
        const result = await both.execute(`
import os, subprocess
out = {'listing': sorted(os.listdir('/workspace')), 'first': open('/workspace/data/table.csv').read(), 'second': open('/workspace/data-2/notes.md').read()}
for name in ('data', 'data-2'):
    try:
        open('/workspace/%s/new.txt' % name, 'w').write('x')
        out['write ' + name] = 'written'
    except OSError as e:
        out['write ' + name] = type(e).__name__
try:
    open('/workspace/new.txt', 'w').write('x')
    out['write top'] = 'written'
except OSError as e:
    out['write top'] = type(e).__name__
try:
    subprocess.run(['/workspace/data-2/run.sh'], check=True, capture_output=True)
    out['exec'] = 'ran'
except OSError as e:
    out['exec'] = type(e).__name__
out['options'] = sorted((l.split()[1], l.split()[3].split(',')[0]) for l in open('/proc/mounts') if l.split()[1].startswith('/workspace'))
out['noexec'] = all('noexec' in l.split()[3] and 'nosuid' in l.split()[3] and 'nodev' in l.split()[3] for l in open('/proc/mounts') if l.split()[1].startswith('/workspace'))
out
`);
        assert.equal(result.status, 'ok', JSON.stringify(result.error));
        const value = result.value ?? '';
        assert.match(value, /'listing': \['data', 'data-2'\]/);
        assert.match(value, /'first': 'a,b\\n1,2\\n'/);
        assert.match(value, /'second': '# notes\\n'/);
        for (const name of ['data', 'data-2', 'top'])
          assert.match(value, new RegExp(`'write ${name}': '(OSError|PermissionError)'`), `not writable: ${name}`);
        assert.match(value, /'exec': 'PermissionError'/);
        assert.match(value, /'options': \[\('\/workspace\/data', 'ro'\), \('\/workspace\/data-2', 'ro'\)\]/);
        assert.match(value, /'noexec': True/);
      } finally {
        await both.close();
        rmSync(second, { recursive: true, force: true });
      }
    });

    test('one bad folder among several refuses the start, named', async () => {
      const bad = new SessionManager(
        testSandbox(runtime, { workspace: { path: [join(dir, 'data'), join(dir, 'gone')], access: 'read-only' }, prewarm: false }),
      );
      try {
        const result = await bad.execute('1');
        assert.notEqual(result.status, 'ok');
        assert.match(JSON.stringify(result.error), /sandbox\.workspace\.path does not exist: .*gone/);
      } catch (error) {
        assert.match(String(error), /sandbox\.workspace\.path does not exist: .*gone/);
      } finally {
        await bad.close();
      }
    });

    test('system folders (/proc, /etc) are refused before any container starts: by run, by the MCP bridge and at every start', async () => {
      // The CLI: exit 2, the folder named, before a runtime is asked for anything.
      for (const folder of ['/proc', '/etc']) {
        const cli = await execa(
          process.execPath,
          [
            'dist/cli.js',
            'run',
            '--runtime',
            runtime,
            '--image',
            TEST_IMAGE,
            '--workspace',
            folder,
            '--workspace-access',
            'read-only',
            '-c',
            '1',
          ],
          { reject: false },
        );
        assert.equal(cli.exitCode, 2, cli.stderr);
        assert.match(
          cli.stderr,
          new RegExp(`sandbox\\.workspace\\.path must not be a system folder or inside one: ${folder} is in ${folder}, which`),
        );
      }
      // The MCP bridge (as VS Code starts it, with --config): it does not start, and says why.
      const configDir = mkdtempSync(join(tmpdir(), 'cem-ws-sys-'));
      try {
        const config = join(configDir, 'config.json');
        writeFileSync(
          config,
          JSON.stringify({
            stateDir: join(configDir, 'state'),
            sandbox: { runtime, image: TEST_IMAGE, workspace: { path: ['/proc', '/etc'], access: 'read-only' } },
          }),
        );
        const serve = await execa(process.execPath, ['dist/cli.js', '--config', config], { reject: false, input: '' });
        assert.equal(serve.exitCode, 2, serve.stderr);
        assert.match(
          serve.stderr,
          /sandbox\.workspace\.path must not be a system folder or inside one: \/proc is in \/proc, which shows the host's processes/,
        );
      } finally {
        rmSync(configDir, { recursive: true, force: true });
      }
      // A session manager given /etc (say, by a settings change) refuses every start with the same words.
      const refusing = new SessionManager(testSandbox(runtime, { workspace: { path: '/etc', access: 'read-only' }, prewarm: false }));
      try {
        const refused = await refusing.execute('1').then(
          (result) => JSON.stringify(result.error),
          (error: Error) => error.message,
        );
        assert.match(refused, /must not be a system folder or inside one: \/etc is in \/etc/);
      } finally {
        await refusing.close();
      }
    });

    test('a missing folder is refused with a clear error, not mounted', async () => {
      const missing = new SessionManager(
        testSandbox(runtime, { workspace: { path: join(dir, 'nope'), access: 'read-only' }, prewarm: false }),
      );
      try {
        const result = await missing.execute('1');
        assert.notEqual(result.status, 'ok');
        assert.match(JSON.stringify(result.error), /sandbox\.workspace\.path does not exist/);
      } catch (error) {
        assert.match(String(error), /sandbox\.workspace\.path does not exist/);
      } finally {
        await missing.close();
      }
    });
  });
}

// The `code-execution-mode` command as people and scripts use it (the built dist/cli.js).
import assert from 'node:assert/strict';
import { execa } from 'execa';
import { chmod, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { FIXTURE } from '../helpers/bridge.ts';
import { TEST_IMAGE, testRuntimes } from '../helpers/env.ts';

const cli = (args: string[], input?: string) =>
  execa(process.execPath, ['dist/cli.js', ...args], { reject: false, ...(input !== undefined ? { input } : {}) });

for (const runtime of testRuntimes()) {
  describe(`cli on ${runtime}`, () => {
    const base = ['--runtime', runtime, '--image', TEST_IMAGE];

    test('run -c prints output and the value, exit 0', async () => {
      const result = await cli(['run', ...base, '-c', 'import sys\nprint("out")\nprint("err", file=sys.stderr)\n6 * 7']);
      assert.equal(result.exitCode, 0, result.stderr);
      assert.equal(result.stdout, 'out\n42');
      assert.equal(result.stderr, 'err');
    });

    test('run reads code from stdin and reports errors with exit 1', async () => {
      const result = await cli(['run', ...base, '-'], 'raise KeyError("nope")');
      assert.equal(result.exitCode, 1);
      assert.match(result.stderr, /KeyError: 'nope'/);
    });

    test('run has the proxied servers of its --config', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'cem-cli-'));
      const config = join(dir, 'config.json');
      await writeFile(
        config,
        JSON.stringify({ stateDir: join(dir, 'state'), servers: { fixture: { command: process.execPath, args: [FIXTURE] } } }),
      );
      const result = await cli(['run', ...base, '--config', config, '-c', 'await mcp_fixture.add(a=1, b=2)']);
      assert.equal(result.exitCode, 0, result.stderr);
      assert.equal(result.stdout, "{'sum': 3}");
      const log = await readFile(join(dir, 'state', 'runs.jsonl'), 'utf8');
      assert.match(log, /"type":"tool-call".*"tool":"add".*"outcome":"ok"/);
    });

    test('--workspace-access read-only mounts --workspace at /workspace', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'cem-cli-ws-'));
      await chmod(dir, 0o755);
      await writeFile(join(dir, 'note.txt'), 'from the host');
      await chmod(join(dir, 'note.txt'), 0o644);
      const code = 'open("/workspace/note.txt").read()';
      const result = await cli(['run', ...base, '--workspace', dir, '--workspace-access', 'read-only', '-c', code]);
      assert.equal(result.exitCode, 0, result.stderr);
      assert.equal(result.stdout, "'from the host'");
      const without = await cli(['run', ...base, '--workspace', dir, '-c', 'import os\nos.path.exists("/workspace")']);
      assert.equal(without.stdout, 'False');
    });

    test('--workspace given twice mounts both folders at /workspace/<name>', async () => {
      const [one, two] = [await mkdtemp(join(tmpdir(), 'cem-cli-ws-')), await mkdtemp(join(tmpdir(), 'cem-cli-ws-'))];
      for (const [dir, text] of [
        [one, 'one'],
        [two, 'two'],
      ] as const) {
        await chmod(dir, 0o755);
        await writeFile(join(dir, 'note.txt'), text);
        await chmod(join(dir, 'note.txt'), 0o644);
      }
      const code = 'import os\nsorted((n, open(f"/workspace/{n}/note.txt").read()) for n in os.listdir("/workspace"))';
      const result = await cli(['run', ...base, '--workspace', one, '--workspace', two, '--workspace-access', 'read-only', '-c', code]);
      assert.equal(result.exitCode, 0, result.stderr);
      const expected = [
        [one, 'one'],
        [two, 'two'],
      ]
        .map(([d, text]) => `('${d!.split('/').pop()}', '${text}')`)
        .sort();
      assert.equal(result.stdout, `[${expected.join(', ')}]`);
    });

    test('a timeout exits 124 and --json gives the whole result', async () => {
      const result = await cli(['run', ...base, '--timeout', '1', '--json', '-c', 'while True: pass']);
      assert.equal(result.exitCode, 124);
      const parsed = JSON.parse(result.stdout) as { status: string; error: { type: string } };
      assert.equal(parsed.status, 'timeout');
      assert.equal(parsed.error.type, 'Timeout');
    });
  });
}

test('bad usage and bad configuration exit 2 with a message that names the problem', async () => {
  const noCode = await cli(['run']);
  assert.equal(noCode.exitCode, 2);
  assert.match(noCode.stderr, /run needs exactly one FILE\.py/);
  const badTimeout = await cli(['run', '--timeout', '9999', '-c', '1']);
  assert.equal(badTimeout.exitCode, 2);
  assert.match(badTimeout.stderr, /exceeds sandbox\.maxTimeoutSeconds \(300\)/);
  const badAccess = await cli(['run', '--workspace-access', 'read-write', '-c', '1']);
  assert.equal(badAccess.exitCode, 2);
  assert.match(badAccess.stderr, /--workspace-access takes "none" or "read-only"/);
  const rootMount = await cli(['run', '--workspace', '/', '--workspace-access', 'read-only', '-c', '1']);
  assert.equal(rootMount.exitCode, 2);
  assert.match(rootMount.stderr, /file-system root/);
  const badRuntime = await cli(['run', '--runtime', 'lxc', '-c', '1']);
  assert.equal(badRuntime.exitCode, 2);
  assert.match(badRuntime.stderr, /sandbox\.runtime/);
});

test("on a terminal, run shows the sandbox's escape sequences escaped; --raw and a pipe pass them through", async () => {
  const [runtime = 'podman'] = testRuntimes();
  // OSC 52 (clipboard), a screen clear and a title change, on stdout and stderr.
  const code = 'import sys\nprint("a\\x1b]52;c;cHduZWQ=\\x07b\\x1b[2J\\x1b]0;t\\x07c")\nprint("e\\x1b]0;t\\x07", file=sys.stderr)';
  const args = ['dist/cli.js', 'run', '--runtime', runtime, '--image', TEST_IMAGE, '-c', code];
  // `script` runs the command under a pseudo-terminal (stdout and stderr both a TTY) and copies what it wrote.
  const shell = (extra: string[]) => [process.execPath, ...args, ...extra].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
  const tty = await execa('script', ['-qfec', shell([]), '/dev/null'], { reject: false });
  assert.equal(tty.exitCode, 0, tty.stdout + tty.stderr);
  assert.ok(!tty.stdout.includes('\x1b'), JSON.stringify(tty.stdout));
  assert.ok(tty.stdout.includes('a\\x1b]52;c;cHduZWQ=\\x07b\\x1b[2J\\x1b]0;t\\x07c'), JSON.stringify(tty.stdout));
  assert.ok(tty.stdout.includes('e\\x1b]0;t\\x07'), JSON.stringify(tty.stdout));
  const raw = await execa('script', ['-qfec', shell(['--raw']), '/dev/null'], { reject: false });
  assert.ok(raw.stdout.includes('a\x1b]52;c;cHduZWQ=\x07b'), JSON.stringify(raw.stdout));
  const piped = await cli(args.slice(1));
  assert.equal(piped.stdout, 'a\x1b]52;c;cHduZWQ=\x07b\x1b[2J\x1b]0;t\x07c');
});

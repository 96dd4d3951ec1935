// Snippet provenance through the real bridge and real containers: a run that calls run_snippet
// leaves in the run log which snippet it ran (name, folder, the hash of the source it got) and
// its arguments, shortened in the sandbox (a huge or unprintable argument costs the log a few
// hundred characters), also for calls made concurrently with asyncio.gather.
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseRunLog } from '../../src/state/run-log/reader.ts';
import { MAX_SNIPPET_ARGUMENT_CHARS } from '../../src/state/run-log/writer.ts';
import { snippetHash } from '../../src/state/snippets.ts';
import { startBridge, structured, tempDir, textOf, type BridgeHandle } from '../helpers/bridge.ts';
import { TEST_IMAGE, testRuntimes } from '../helpers/env.ts';

const ECHO = '"""Returns what it was given."""\n\n\ndef main(*args, **kwargs):\n    return len(args) + len(kwargs)\n';
const TEAM = '"""A workspace snippet."""\n\n\nasync def main(n=1):\n    return n * 2\n';

// Provenance is written by the bridge and the in-sandbox runtime, the same on every engine: on
// the first test runtime.
for (const runtime of testRuntimes().slice(0, 1)) {
  describe(`snippet provenance on ${runtime}`, () => {
    let bridge: BridgeHandle;
    let stateDir: string;

    before(async () => {
      const dir = await tempDir('cem-provenance-');
      stateDir = join(dir, 'state');
      await mkdir(join(stateDir, 'snippets'), { recursive: true });
      await writeFile(join(stateDir, 'snippets', 'echo_all.py'), ECHO);
      const workspace = join(dir, 'ws');
      await mkdir(workspace, { recursive: true });
      await writeFile(join(workspace, 'team_double.py'), TEAM);
      bridge = await startBridge({
        sandbox: { runtime, image: TEST_IMAGE, memory: '256m', timeoutSeconds: 30 },
        stateDir,
        servers: {},
        workspaceSnippetsDir: workspace,
      });
    });
    after(async () => {
      await bridge?.close();
    });

    const runsOf = async () => parseRunLog(await readFile(join(stateDir, 'runs.jsonl'), 'utf8'));

    test('the run log names the snippet, its folder and source hash, and the arguments shortened', async () => {
      const code = [
        'class Loud:',
        '    def __repr__(self):',
        '        raise RuntimeError("no repr")',
        'await run_snippet("echo_all", "Ada", "x" * 100_000, list(range(10_000)), Loud(), limit=3)',
      ].join('\n');
      const result = await bridge.call(code);
      assert.equal(structured(result).status, 'ok', textOf(result));
      const run = (await runsOf()).find((r) => r.code === code)!;
      assert.equal(run.snippets.length, 1);
      const [use] = run.snippets;
      assert.equal(use!.name, 'echo_all');
      assert.equal(use!.origin, 'user');
      assert.equal(use!.sha256, snippetHash(ECHO));
      const shown = use!.arguments!;
      assert.ok(shown.startsWith("'Ada', 'xxx"), shown);
      assert.match(shown, /<Loud[^>]*>, limit=3$/);
      assert.ok(shown.length <= MAX_SNIPPET_ARGUMENT_CHARS, `${shown.length} characters`);
    });

    test('concurrent run_snippet calls are each logged, a workspace snippet as such', async () => {
      const code =
        'import asyncio\nsum(await asyncio.gather(*[run_snippet("team_double", n=i) for i in range(12)], run_snippet("echo_all")))';
      const result = await bridge.call(code);
      assert.equal(structured(result).status, 'ok', textOf(result));
      const run = (await runsOf()).find((r) => r.code === code)!;
      assert.equal(run.snippets.length, 13);
      const team = run.snippets.filter((s) => s.name === 'team_double');
      assert.equal(team.length, 12);
      assert.ok(team.every((s) => s.origin === 'workspace' && s.sha256 === snippetHash(TEAM)));
      assert.deepEqual(team.map((s) => s.arguments).sort(), Array.from({ length: 12 }, (_, i) => `n=${i}`).sort());
    });
  });
}

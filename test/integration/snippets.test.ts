// Snippets through the real bridge: files in <stateDir>/snippets (and a workspace's folder when
// configured) found by search_tool_docs, documented by query_tool_docs, and run in the sandbox
// with run_snippet(NAME, **kwargs), plain or async, calling proxied tools; errors name them.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { MEMORY_SERVER, startBridge, structured, tempDir, textOf, type BridgeHandle } from '../helpers/bridge.ts';
import { TEST_IMAGE, testRuntimes } from '../helpers/env.ts';
import { parseRunLog } from '../../src/state/run-log/reader.ts';
import { snippetHash } from '../../src/state/snippets.ts';

const [runtime = 'podman'] = testRuntimes();
const sandbox = { runtime, image: TEST_IMAGE, memory: '256m', timeoutSeconds: 30 };

const GREET = `"""Greets someone by name, politely."""


def main(name, punctuation="!"):
    return "Hello, " + name + punctuation
`;

const REMEMBER = `# A snippet that uses a proxied server.
"""Stores a note as an entity in the knowledge graph memory and counts the entities."""
import asyncio


async def main(note):
    await asyncio.sleep(0)
    await mcp_memory.create_entities(entities=[{"name": note, "entityType": "note", "observations": []}])
    graph = await mcp_memory.read_graph()
    return len(graph["entities"])
`;

const BROKEN = `"""Fails on purpose."""


def main():
    return 1 / 0
`;

const TEAM = `'''Team helper shared in the workspace: formats release notes.'''


def main(version):
    return "release " + version
`;

// The same whichever sandbox runs the code: the first runtime and WebAssembly.
for (const { label, sandbox: shown } of [
  { label: runtime, sandbox },
  { label: 'wasm', sandbox: { backend: 'wasm', memory: '256m', timeoutSeconds: 30 } },
]) {
  describe(`snippets on ${label}`, () => {
    let bridge: BridgeHandle;
    let plain: BridgeHandle;
    let files: string;

    before(async () => {
      files = await tempDir('cem-snippets-');
      const stateDir = join(files, 'state');
      await mkdir(join(stateDir, 'snippets'), { recursive: true });
      await writeFile(join(stateDir, 'snippets', 'greet.py'), GREET);
      await writeFile(join(stateDir, 'snippets', 'remember_note.py'), REMEMBER);
      await writeFile(join(stateDir, 'snippets', 'broken.py'), BROKEN);
      await writeFile(join(stateDir, 'snippets', 'bad-name.py'), GREET);
      await writeFile(join(stateDir, 'snippets', 'greet_bad_syntax.py'), '"""Broken."""\ndef main(:\n');
      const workspace = join(files, 'ws', '.vscode', 'code-execution-mode', 'snippets');
      await mkdir(workspace, { recursive: true });
      await writeFile(join(workspace, 'release_notes.py'), TEAM);
      const servers = {
        memory: { command: process.execPath, args: [MEMORY_SERVER], env: { MEMORY_FILE_PATH: join(files, 'memory.jsonl') } },
      };
      bridge = await startBridge({ sandbox: shown, stateDir, servers, workspaceSnippetsDir: workspace });
      // The same state without the workspace folder configured.
      plain = await startBridge({ sandbox: shown, stateDir, servers });
    });
    after(async () => {
      await bridge?.close();
      await plain?.close();
    });

    async function run(handle: BridgeHandle, code: string): Promise<unknown> {
      const result = await handle.call(`import json\nprint(json.dumps(${code}))`);
      assert.equal(structured(result).status, 'ok', textOf(result));
      return JSON.parse(String(structured(result).stdout));
    }

    test('search_tool_docs finds a snippet as a hit of kind "snippet", and run_snippet runs it with kwargs', async () => {
      const hits = (await run(bridge, 'await search_tool_docs("greet someone politely")')) as Array<Record<string, unknown>>;
      const { score, ...hit } = hits[0] ?? {};
      assert.deepEqual(hit, {
        kind: 'snippet',
        server: 'snippets',
        tool: 'greet',
        alias: 'greet',
        description: 'Greets someone by name, politely.',
      });
      // Its name has one of the three words, its docstring the other two: (1 + 0.5 + 0.5) / 3.
      assert.equal(score, 0.67);
      assert.equal(await run(bridge, 'await run_snippet("greet", name="Ada")'), 'Hello, Ada!');
      assert.equal(await run(bridge, 'await run_snippet("greet", name="Ada", punctuation="?")'), 'Hello, Ada?');
    });

    test('query_tool_docs("snippets", ...) gives the source and main\'s signature', async () => {
      const [doc] = (await run(bridge, 'await query_tool_docs("snippets", tool="greet", detail="full")')) as Array<Record<string, unknown>>;
      assert.equal(doc!.source, GREET);
      assert.equal(doc!.main, 'def main(name, punctuation="!")');
      assert.equal(doc!.signature, 'await run_snippet("greet", name, punctuation="!")');
      const all = (await run(bridge, '[d["tool"] for d in await query_tool_docs("snippets")]')) as string[];
      assert.deepEqual(all.sort(), ['broken', 'greet', 'greet_bad_syntax', 'release_notes', 'remember_note']);
    });

    test('an async main calls proxied tools and its value is returned', async () => {
      const hits = (await run(bridge, '[h["tool"] for h in await search_tool_docs("store a note in memory", limit=6)]')) as string[];
      assert.equal(hits[0], 'remember_note', hits.join(', '));
      assert.ok(hits.includes('create_entities'), hits.join(', '));
      assert.equal(await run(bridge, 'await run_snippet("remember_note", note="buy milk")'), 1);
    });

    test('errors name the snippet', async () => {
      const broken = await bridge.call('await run_snippet("broken")');
      assert.equal(structured(broken).status, 'error');
      assert.match(textOf(broken), /SnippetError: snippet 'broken': ZeroDivisionError: division by zero/);
      // The snippet's own line is in the traceback, under its name; the runtime's frames are not.
      assert.match(textOf(broken), /File "<snippet broken>", line 5, in main\n\s+return 1 \/ 0/);
      assert.doesNotMatch(textOf(broken), /<mcp\.runtime>/);
      const syntax = await bridge.call('await run_snippet("greet_bad_syntax")');
      assert.match(textOf(syntax), /SnippetError: snippet 'greet_bad_syntax': syntax error on line 2/);
      const missing = await bridge.call('await run_snippet("nope")');
      assert.match(textOf(missing), /SnippetError: snippet 'nope': there is no snippet "nope"/);
      const badName = await bridge.call('await run_snippet("bad-name")');
      assert.match(textOf(badName), /SnippetError: snippet 'bad-name': .*snippet name/);
      const args = await bridge.call('await run_snippet("greet", nobody=1)');
      assert.match(textOf(args), /SnippetError: snippet 'greet': TypeError: .*nobody/);
      // The run goes on in the same session afterwards.
      assert.equal(await run(bridge, 'await run_snippet("greet", name="again")'), 'Hello, again!');
    });

    test('the workspace snippets folder is used only when configured', async () => {
      assert.equal(await run(bridge, 'await run_snippet("release_notes", version="1.2")'), 'release 1.2');
      const found = (await run(bridge, '[h["tool"] for h in await search_tool_docs("release notes")]')) as string[];
      assert.ok(found.includes('release_notes'), found.join(', '));
      const notFound = (await run(plain, '[h["tool"] for h in await search_tool_docs("release notes")]')) as string[];
      assert.ok(!notFound.includes('release_notes'), notFound.join(', '));
      const refused = await plain.call('await run_snippet("release_notes", version="1.2")');
      assert.match(textOf(refused), /there is no snippet "release_notes"/);
      // The user's own snippets work without it.
      assert.equal(await run(plain, 'await run_snippet("greet", name="Bo")'), 'Hello, Bo!');
    });
  });
}

describe('snippet command line', () => {
  test('save a logged run as a snippet, list it, run it through the bridge, remove it', async () => {
    const files = await tempDir('cem-snippet-cli-');
    const stateDir = join(files, 'state');
    const configFile = join(files, 'config.json');
    await writeFile(configFile, JSON.stringify({ stateDir, sandbox }));
    const cli = (...args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolvePromise) => {
        execFile(process.execPath, [resolve('dist/cli.js'), '--config', configFile, ...args], (error, stdout, stderr) =>
          resolvePromise({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
        );
      });
    const bridge = await startBridge({ sandbox, stateDir });
    try {
      const code = '# count the letters of a word\nword = "snippet"\nlen(word) * 2';
      assert.equal(structured(await bridge.call(code)).status, 'ok');
      const run = parseRunLog(await readFile(join(stateDir, 'runs.jsonl'), 'utf8')).find((r) => r.code === code)!;
      assert.ok(run, 'the run is logged');
      const saved = await cli('snippet', 'save', 'count_letters', '--run', run.id, '--params', 'word');
      assert.equal(saved.code, 0, saved.stderr);
      const path = join(stateDir, 'snippets', 'count_letters.py');
      assert.equal((await stat(path)).mode & 0o777, 0o600);
      assert.equal(
        await readFile(path, 'utf8'),
        '"""count the letters of a word"""\n' +
          `# Saved from sandbox run ${run.id} (session ${run.session}, started ${run.started}).\n` +
          '\n\nasync def main(word="snippet"):\n    # count the letters of a word\n    # word = "snippet"  (now a parameter of main)\n    return len(word) * 2\n',
      );
      // The run log says which run the snippet came from, as the editor's Save as Snippet does.
      const logged = parseRunLog(await readFile(join(stateDir, 'runs.jsonl'), 'utf8')).find((r) => r.id === run.id)!;
      assert.deepEqual(
        logged.savedAsSnippets.map((s) => [s.name, s.sha256]),
        [['count_letters', snippetHash(await readFile(path, 'utf8'))]],
      );
      const again = await cli('snippet', 'save', 'count_letters', '--run', run.id);
      assert.equal(again.code, 2);
      assert.match(again.stderr, /exists; --force replaces it/);
      const listed = await cli('snippet', 'list');
      assert.match(listed.stdout, /^count_letters\(word="snippet"\) {2}count the letters of a word$/m);
      const result = await bridge.call('print(await run_snippet("count_letters"), await run_snippet("count_letters", word="ab"))');
      assert.equal(structured(result).stdout, '14 4\n', textOf(result));
      const bad = await cli('snippet', 'save', 'bad-name', '--run', run.id);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /not a valid snippet name/);
      const removed = await cli('snippet', 'remove', 'count_letters');
      assert.equal(removed.code, 0, removed.stderr);
      await assert.rejects(stat(path));
    } finally {
      await bridge.close();
    }
  });
});

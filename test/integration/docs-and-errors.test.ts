// What sandboxed code is told, through the real bridge with the real memory and filesystem
// servers: docs that show shapes and what a call returns, and errors that carry their fix
// (short, with the fix in the message, and no asyncio or runtime frames).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  FILESYSTEM_SERVER,
  FIXTURE,
  MEMORY_SERVER,
  startBridge,
  structured,
  tempDir,
  textOf,
  type BridgeHandle,
} from '../helpers/bridge.ts';
import { CATALOG_FILE } from '../../src/state/catalog-file.ts';
import { LEARNED_RETURNS_FILE } from '../../src/state/learned-returns-file.ts';
import { TEST_IMAGE, testRuntimes } from '../helpers/env.ts';
import { until } from '../helpers/wait.ts';

const [runtime = 'podman'] = testRuntimes();
const sandbox = { runtime, image: TEST_IMAGE, memory: '256m', timeoutSeconds: 30 };
/** An error an agent reads in one go: its fix, not a page of traceback. */
const SHORT = 600;

// The same whichever sandbox runs the code: the first runtime and WebAssembly.
for (const { label, sandbox: shown } of [
  { label: runtime, sandbox },
  { label: 'wasm', sandbox: { backend: 'wasm', memory: '256m', timeoutSeconds: 30 } },
]) {
  describe(`docs and errors on ${label}`, () => {
    let bridge: BridgeHandle;
    let files: string;
    let config: Record<string, unknown>;

    before(async () => {
      files = await tempDir('cem-docs-');
      config = {
        sandbox: shown,
        stateDir: join(files, 'state'),
        servers: {
          memory: {
            command: process.execPath,
            args: [MEMORY_SERVER],
            env: { MEMORY_FILE_PATH: join(files, 'memory.jsonl') },
            description: 'Knowledge graph memory',
          },
          filesystem: { command: process.execPath, args: [FILESYSTEM_SERVER, files], description: 'Files in a scratch folder' },
          fixture: { command: process.execPath, args: [FIXTURE], description: 'Test fixture' },
        },
      };
      bridge = await startBridge(config);
    });
    after(async () => {
      await bridge?.close();
    });

    /** What the code printed, with a signature that pydoc wrapped (Python 3.13 and later) on one line. */
    async function stdoutOf(code: string): Promise<string> {
      const result = await bridge.call(code);
      assert.equal(structured(result).status, 'ok', textOf(result));
      return String(structured(result).stdout)
        .replace(/\(\n\s+/g, '(')
        .replace(/,\n\s+(?=\S)/g, ', ')
        .replace(/,?\n\)/g, ')');
    }

    /** Runs code that fails; returns the text the agent reads, checked to be short. */
    async function failure(code: string): Promise<string> {
      const result = await bridge.call(code);
      assert.equal(structured(result).status, 'error', textOf(result));
      const text = textOf(result);
      assert.ok(text.length < SHORT, `${text.length} characters:\n${text}`);
      assert.doesNotMatch(text, /<mcp\.runtime>|<kernel>|asyncio[/\\]/, text);
      return text;
    }

    test('help() shows nested parameter shapes and what a call returns', async () => {
      const text = await stdoutOf('help(mcp_memory.create_entities)');
      assert.match(text, /async create_entities\(\*, entities: list\[\{name: str, entityType: str, observations: list\[str\]\}\]\)/);
      assert.match(text, /Returns: \{entities: list\[\{name: str, entityType: str, observations: list\[str\]\}\]\}/);
      assert.match(text, /Create multiple new entities in the knowledge graph/);
    });

    test('help() shows enums and defaults, and help(server) lists its tools', async () => {
      const text = await stdoutOf('help(mcp_filesystem.list_directory_with_sizes)');
      assert.match(text, /sortBy: Literal\["name", "size"\] = 'name'\) -> \{content: str\}/);
      assert.match(text, /sortBy \(optional, default 'name'\): Sort entries by name or size/);
      const server = await stdoutOf('help(mcp_memory)');
      assert.match(server, /^mcp_memory: Knowledge graph memory$/m);
      assert.match(server, /async read_graph\(\) -> \{entities: list\[/);
      assert.match(server, /async open_nodes\(\*, names: list\[str\]\)/);
    });

    /** The JSON line the code printed last. */
    function printed(result: Awaited<ReturnType<BridgeHandle['call']>>): Record<string, unknown> {
      assert.equal(structured(result).status, 'ok', textOf(result));
      const line = String(structured(result).stdout)
        .split('\n')
        .findLast((l) => l.startsWith('{'));
      assert.ok(line, textOf(result));
      return JSON.parse(line) as Record<string, unknown>;
    }

    test('query_tool_docs gives the signature and what a call returns: the output schema, the content, or str once calls returned text', async () => {
      const result = await bridge.call(
        [
          'import contextlib, io, json',
          'read = (await query_tool_docs("filesystem", "read_text_file"))[0]',
          'await mcp_fixture.image()',
          'image = (await query_tool_docs("fixture", "image"))[0]',
          'await mcp_fixture.echo(message="hi")',
          'echo = (await query_tool_docs("fixture", "echo"))[0]',
          'full = (await query_tool_docs("fixture", "echo", detail="full"))[0]',
          'shown = io.StringIO()',
          'with contextlib.redirect_stdout(shown):',
          '    help(mcp_fixture.echo)',
          'print(json.dumps({"read": read, "image": image, "echo": echo, "full": full, "help": shown.getvalue()}))',
        ].join('\n'),
        { session: 'returns' },
      );
      const got = printed(result) as Record<string, Record<string, unknown>> & { help?: unknown };
      assert.deepEqual(got.read, {
        server: 'filesystem',
        tool: 'read_text_file',
        alias: 'read_text_file',
        hint: 'read-only',
        signature: 'mcp_filesystem.read_text_file(*, path: str, tail: float = None, head: float = None) -> {content: str}',
        returns: '{content: str}',
      });
      assert.equal(got.image!.signature, 'mcp_fixture.image() -> str | dict | list[str | dict]');
      assert.match(String(got.image!.returns), /^the tool's content: str for one text item; a dict for one image/);
      assert.equal(got.echo!.signature, 'mcp_fixture.echo(*, message: str) -> str');
      assert.equal(got.echo!.returns, "str: the tool's text (every call so far returned one text item)");
      assert.equal(got.echo!.description, undefined, 'the summary is not repeated');
      assert.equal(got.full!.description, 'Echo a message back as text');
      assert.ok(got.full!.inputSchema);
      // help() in the session that made the call: the learned return type reached its signature.
      const echo = String(got.help);
      assert.match(echo, /async echo\(\*, message: str\) -> str\n/);
      assert.match(echo, /Returns: str: the tool's text/);
    });

    test("a request no server serves finds [] and the text says so, naming the servers; weak hits are said to be weak; a hit has its score and help()'s signature", async () => {
      const result = await bridge.call(
        [
          'import contextlib, io, json',
          'await mcp_fixture.echo(message="x")',
          'none = await search_tool_docs("book a flight from Boston to Denver next Friday")',
          'hits = await search_tool_docs("echo a message back", limit=3)',
          'weak = await search_tool_docs("turn off the living room lights")',
          'out = io.StringIO()',
          'with contextlib.redirect_stdout(out):',
          '    help(mcp_fixture.echo)',
          'print(json.dumps({"none": none, "hits": hits, "weak": weak, "help": out.getvalue()}))',
        ].join('\n'),
        { session: 'search' },
      );
      assert.match(
        textOf(result),
        /search_tool_docs: nothing fits 'book a flight from Boston to Denver next Friday': no tool of the configured servers does this\. The servers: memory \(\d+ tools: Knowledge graph memory\); filesystem \(\d+ tools: Files in a scratch folder\); fixture \(\d+ tools: Test fixture\)\./,
      );
      // Hits that all score low come with a note that they may not do it, naming the servers.
      assert.match(
        textOf(result),
        /search_tool_docs: only weak matches for 'turn off the living room lights' \(best score 0\.\d\d\): check that a hit does this before calling it\. If none does, no configured server does; the servers: memory \(\d+ tools: Knowledge graph memory\); filesystem/,
      );
      const got = printed(result) as {
        none: unknown[];
        hits: Array<Record<string, unknown>>;
        weak: Array<{ score: number }>;
        help: string;
      };
      assert.ok(got.weak.length > 0 && got.weak.every((h) => h.score < 0.3), JSON.stringify(got.weak));
      assert.doesNotMatch(textOf(result), /only weak matches for 'echo a message back'/);
      assert.deepEqual(got.none, []);
      const hit = got.hits.find((h) => h.server === 'fixture' && h.tool === 'echo');
      assert.ok(hit, JSON.stringify(got.hits));
      assert.ok(typeof hit.score === 'number' && hit.score > 0 && hit.score <= 1, String(hit.score));
      assert.equal(hit.params, undefined, "the host's params stay out of the hit");
      // help() shows the same signature: `async echo(...)` where the hit names mcp_fixture.echo(...).
      const shown = /async echo(\(.*)\n/.exec(
        got.help
          .replace(/\(\n\s+/g, '(')
          .replace(/,\n\s+(?=\S)/g, ', ')
          .replace(/,?\n\)/g, ')'),
      )?.[1];
      assert.equal(hit.signature, `mcp_fixture.echo${shown}`);
      assert.equal(hit.signature, 'mcp_fixture.echo(*, message: str) -> str');
    });

    test('discovered_servers() lists tool names, from the cached catalog before a server starts', async () => {
      await bridge.call('await mcp_memory.read_graph()\nawait mcp_filesystem.list_allowed_directories()');
      // The catalog file is written shortly after a listing; a second bridge on the same state
      // dir starts no server to answer.
      const catalog = join(files, 'state', CATALOG_FILE);
      await until('both tool lists in the catalog file', () => {
        const text = existsSync(catalog) ? readFileSync(catalog, 'utf8') : '';
        return text.includes('"create_entities"') && text.includes('"read_text_file"');
      });
      const second = await startBridge(config);
      try {
        const result = await second.call('{s["name"]: (s["status"], s["tools"], s["toolNames"][:3]) for s in discovered_servers()}');
        const value = String(structured(result).value);
        assert.match(
          value,
          /'memory': \('not-started', 9, \['create_entities', 'create_relations', 'add_observations'\]\)/,
          textOf(result),
        );
        assert.match(value, /'filesystem': \('not-started', 14, \['read_file', 'read_text_file', 'read_media_file'\]\)/, textOf(result));
      } finally {
        await second.close();
      }
    });

    test('a second bridge on the same state dir shows what the first learned a tool returns, before any call of its own', async () => {
      await bridge.call('await mcp_fixture.echo(message="hi")\nawait mcp_fixture.image()');
      const learned = join(files, 'state', LEARNED_RETURNS_FILE);
      await until('what echo returned in the state dir', () => existsSync(learned) && readFileSync(learned, 'utf8').includes('"echo"'));
      const second = await startBridge(config);
      try {
        const result = await second.call(
          [
            'import json',
            'echo = (await query_tool_docs("fixture", "echo"))[0]',
            'image = (await query_tool_docs("fixture", "image"))[0]',
            'print(json.dumps({"echo": echo, "image": image}))',
          ].join('\n'),
        );
        const got = printed(result) as Record<string, Record<string, unknown>>;
        assert.equal(got.echo!.signature, 'mcp_fixture.echo(*, message: str) -> str');
        assert.equal(got.echo!.returns, "str: the tool's text (every call so far returned one text item)");
        assert.equal(got.image!.signature, 'mcp_fixture.image() -> str | dict | list[str | dict]');
      } finally {
        await second.close();
      }
    });

    test('a wrong keyword names itself, the closest valid one and the signature, before any call', async () => {
      const text = await failure(`await mcp_filesystem.read_text_file(file_path=${JSON.stringify(join(files, 'x.txt'))})`);
      assert.match(
        text,
        /TypeError: mcp_filesystem\.read_text_file\(\) got an unexpected keyword argument 'file_path'; did you mean 'path'\?/,
      );
      assert.match(
        text,
        /Signature: mcp_filesystem\.read_text_file\(\*, path: str, tail: float = None, head: float = None\) -> \{content: str\}/,
      );
      const order = await failure('await mcp_filesystem.read_file_text(path="x")');
      assert.match(order, /has no tool 'read_file_text'\. Did you mean 'read_text_file'\?/);
    });

    test('a missing keyword names itself and the signature; a positional argument says to use keywords', async () => {
      const missing = await failure('await mcp_memory.create_entities()');
      assert.match(missing, /missing required keyword argument: 'entities'/);
      assert.match(
        missing,
        /Signature: mcp_memory\.create_entities\(\*, entities: list\[\{name: str, entityType: str, observations: list\[str\]\}\]\)/,
      );
      const positional = await failure('await mcp_memory.open_nodes(["Ada"])');
      assert.match(positional, /takes keyword arguments only: write await mcp_memory\.open_nodes\(names=\['Ada'\]\)/);
      assert.match(positional, /Signature: mcp_memory\.open_nodes\(\*, names: list\[str\]\)/);
      const result = await bridge.call('await mcp_memory.open_nodes({"names": []})');
      assert.equal(structured(result).status, 'ok', 'one dict of arguments still works');
    });

    test('an unknown mcp_ name suggests the closest server', async () => {
      const text = await failure('await mcp_filesytem.list_allowed_directories()');
      assert.match(
        text,
        /NameError: name 'mcp_filesytem' is not defined\nDid you mean mcp_filesystem\? The proxied servers: mcp_memory, mcp_filesystem, mcp_fixture\./,
      );
    });

    test('a network failure says the sandbox has no network, without the chained traceback', async () => {
      const text = await failure('import urllib.request\nurllib.request.urlopen("http://example.com/data.json", timeout=5)');
      assert.match(text, /The sandbox has no network \(by design\): do not retry\. Reach outside services through a proxied MCP server/);
      assert.doesNotMatch(text, /During handling|The above exception|socket\.py|http[/\\]client\.py/);
      const socket = await failure('import socket\nsocket.create_connection(("93.184.216.34", 80), timeout=5)');
      assert.match(socket, /has no network/);
    });

    test('a missing module says what is installed and that pip is not available', async () => {
      const text = await failure('import pandas');
      assert.match(text, /ModuleNotFoundError: No module named 'pandas'/);
      assert.match(text, /standard library/);
      // The WebAssembly sandbox has no pip either way: it says packages need a container.
      assert.match(text, label === 'wasm' ? /Packages need the container sandbox/ : /pip is not available/);
      assert.match(text, /Instead of pandas use csv, json, statistics or sqlite3/);
    });

    test('a coroutine used without await says so: subscripted, returned or printed', async () => {
      const text = await failure('graph = mcp_memory.read_graph()\ngraph["entities"]');
      assert.match(
        text,
        /'coroutine' object is not subscriptable\nThat value is a coroutine: an async call was not awaited\. Tool calls are async: write result = await mcp_<server>\.<tool>\(\.\.\.\)/,
      );
      const returned = await bridge.call('mcp_memory.read_graph()');
      assert.equal(
        structured(returned).value,
        '<coroutine mcp_memory.read_graph(), not awaited: write result = await mcp_memory.read_graph(...)>',
      );
      const printed = await bridge.call('print(mcp_memory.read_graph())');
      assert.match(
        String(structured(printed).stderr),
        /coroutine 'mcp_memory\.read_graph' was never awaited: write result = await mcp_memory\.read_graph\(\.\.\.\)/,
      );
      assert.doesNotMatch(String(structured(printed).stderr), /tracemalloc/);
    });

    test("tracebacks of async code keep the code's frames and drop asyncio's and the runtime's", async () => {
      const text = await failure(
        [
          'import asyncio',
          'async def look(name):',
          '    return await mcp_memory.open_nodes(nmes=[name])',
          'await asyncio.gather(look("a"), look("b"))',
        ].join('\n'),
      );
      assert.match(text, /line 4, in <module>[\s\S]*line 3, in look/);
      assert.match(text, /unexpected keyword argument 'nmes'; did you mean 'names'\?/);
      const tool = await failure('try:\n    await mcp_fixture.fail(why="testing")\nfinally:\n    pass');
      assert.match(tool, /ToolError: fixture\.fail: failed on purpose: testing/);
    });
  });
}

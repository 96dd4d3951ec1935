// The real bridge process over stdio, driven by the MCP SDK client, proxying real npm MCP
// servers (memory, filesystem) and the fixture server over stdio and Streamable HTTP.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { encode } from 'gpt-tokenizer';
import { execa } from 'execa';
import { RUN_LOG_FILE } from '../../src/state/run-log/writer.ts';
import { MAX_CODE_CHARS } from '../../src/bridge/tool/run-python.ts';
import {
  FILESYSTEM_SERVER,
  FIXTURE,
  MEMORY_SERVER,
  startBridge,
  startHttpFixture,
  structured,
  tempDir,
  textOf,
  type BridgeHandle,
} from '../helpers/bridge.ts';
import { TEST_IMAGE, testRuntimes } from '../helpers/env.ts';

const [runtime = 'podman'] = testRuntimes();
const sandbox = { runtime, image: TEST_IMAGE, memory: '256m', timeoutSeconds: 30, maxTimeoutSeconds: 60 };

describe(`bridge on ${runtime}`, () => {
  let bridge: BridgeHandle;
  let http: Awaited<ReturnType<typeof startHttpFixture>>;
  let files: string;

  before(async () => {
    http = await startHttpFixture({ FIXTURE_TOKEN: 'sesame' });
    files = await tempDir('cem-files-');
    bridge = await startBridge({
      sandbox,
      // Long enough for a 10 MB result on a loaded machine; the hanging tool's test waits it out.
      proxy: { callTimeoutSeconds: 10 },
      servers: {
        memory: {
          command: process.execPath,
          args: [MEMORY_SERVER],
          env: { MEMORY_FILE_PATH: join(files, 'memory.jsonl') },
          description: 'Knowledge graph memory',
        },
        // write_file is annotated destructive, and this client cannot answer confirmations (confirmations.test.ts).
        filesystem: {
          command: process.execPath,
          args: [FILESYSTEM_SERVER, files],
          description: 'Files in a scratch folder',
          confirm: 'none',
        },
        fixture: {
          command: process.execPath,
          args: [FIXTURE],
          env: { FIXTURE_SECRET: 'only-for-the-server' },
          denyTools: ['delete_everything'],
          description: 'Test fixture',
        },
        'web-fixture': { type: 'http', url: http.url, headers: { Authorization: 'Bearer sesame' } },
        loop: { command: 'npx', args: ['-y', 'code-execution-mode'] },
      },
    });
  });
  after(async () => {
    await bridge?.close();
    http?.stop();
  });

  test('the listing is one small tool, whatever the number of servers', async () => {
    const { tools } = await bridge.client.listTools();
    assert.deepEqual(
      tools.map((t) => t.name),
      ['run_python'],
    );
    const tokens = encode(
      JSON.stringify({ name: tools[0]!.name, description: tools[0]!.description, inputSchema: tools[0]!.inputSchema }),
    ).length;
    assert.ok(tokens <= 200, `listing is ${tokens} tokens`);
    assert.match(tools[0]!.description ?? '', /search_tool_docs/);
    const empty = await startBridge({ sandbox });
    try {
      assert.deepEqual((await empty.client.listTools()).tools, tools, 'the listing must not grow with the servers');
    } finally {
      await empty.close();
    }
  });

  test('sandbox code discovers servers and finds tools by plain-language search', async () => {
    // Search waits a bounded time for servers still starting: on a loaded machine, first a call
    // that waits for the memory server, so that the search surely has its tools.
    await bridge.call('await mcp_memory.read_graph()');
    const result = await bridge.call(
      [
        'names = sorted(s["name"] for s in discovered_servers())',
        'hits = await search_tool_docs("create entities in the knowledge graph", limit=3)',
        'docs = await query_tool_docs("fixture", "add", detail="full")',
        '(names, (hits[0]["server"], hits[0]["tool"]), docs[0]["signature"])',
      ].join('\n'),
    );
    assert.equal(structured(result).status, 'ok', textOf(result));
    assert.equal(
      structured(result).value,
      "(['filesystem', 'fixture', 'loop', 'memory', 'web-fixture'], ('memory', 'create_entities'), 'mcp_fixture.add(*, a: float, b: float) -> {sum: float}')",
    );
  });

  test('help() shows a tool signature and description', async () => {
    const result = await bridge.call('help(mcp_fixture.echo)');
    assert.match(String(structured(result).stdout), /echo\(\*, message: 'str'\)|echo\(\*, message: str\)/);
    assert.match(String(structured(result).stdout), /Echo a message back as text/);
  });

  test('calls return structured content or text; the real memory and filesystem servers work', async () => {
    const result = await bridge.call(
      [
        'from mcp import runtime',
        's = await mcp_fixture.add(a=2, b=3)',
        't = await runtime.call_tool("fixture", "echo", {"message": "hi"})',
        'await mcp_memory.create_entities(entities=[{"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}])',
        'graph = await mcp_memory.read_graph()',
        `await mcp_filesystem.write_file(path=${JSON.stringify(join(files, 'note.txt'))}, content="from the sandbox")`,
        `text = await mcp_filesystem.read_text_file(path=${JSON.stringify(join(files, 'note.txt'))})`,
        '(s, t, [e["name"] for e in graph["entities"]], text)',
      ].join('\n'),
    );
    assert.equal(structured(result).status, 'ok', textOf(result));
    const value = String(structured(result).value);
    assert.match(value, /^\(\{'sum': 5\}, 'hi', \['Ada'\], /);
    assert.match(value, /from the sandbox/);
    assert.equal(await readFile(join(files, 'note.txt'), 'utf8'), 'from the sandbox');
    assert.equal(structured(result).toolCalls, 6);
  });

  test('an isError result raises ToolError', async () => {
    const result = await bridge.call(
      'try:\n    await mcp_fixture.fail(why="testing")\nexcept ToolError as e:\n    caught = (e.kind, str(e))\ncaught',
    );
    assert.equal(structured(result).value, "('tool-error', 'fixture.fail: failed on purpose: testing')");
  });

  test('five calls run concurrently', async () => {
    // Each answers once all five wait at the server together (one at a time, each would wait 10 s alone).
    const result = await bridge.call(
      'import asyncio\n[m["together"] for m in await asyncio.gather(*[mcp_fixture.meet(count=5) for _ in range(5)])]',
    );
    assert.equal(structured(result).value, '[5, 5, 5, 5, 5]', textOf(result));
  });

  test('a server that crashes mid-call recovers on the next call', async () => {
    const result = await bridge.call(
      'try:\n    await mcp_fixture.crash()\n    first = "no error"\nexcept ToolError as e:\n    first = e.kind\n(first, await mcp_fixture.echo(message="back"))',
    );
    assert.equal(structured(result).value, "('unavailable', 'back')", textOf(result));
  });

  test('a hanging tool times out without blocking other servers', async () => {
    const result = await bridge.call(
      [
        'import asyncio, time',
        't = time.monotonic()',
        'async def hang():',
        '    try:',
        '        await mcp_fixture.hang()',
        '    except ToolError as e:',
        '        return "timed out" if "timed out" in str(e).lower() else str(e)',
        'results = await asyncio.gather(hang(), mcp_web_fixture.echo(message="web ok"))',
        '(results, time.monotonic() - t < 60)',
      ].join('\n'),
    );
    assert.equal(structured(result).value, "(['timed out', 'web ok'], True)", textOf(result));
  });

  test('denied tools, unknown servers and unknown tools raise clear errors', async () => {
    const result = await bridge.call(
      [
        'out = []',
        'for server, tool in [("fixture", "delete_everything"), ("nowhere", "x"), ("fixture", "nothing"), ("loop", "x")]:',
        '    try:',
        '        await call_tool(server, tool, {})',
        '    except ToolError as e:',
        '        out.append((e.kind, str(e)))',
        'out',
      ].join('\n'),
    );
    const value = String(structured(result).value);
    assert.match(
      value,
      /\('denied', "fixture.delete_everything: tool \\"delete_everything\\" of server \\"fixture\\" is not allowed by the bridge's policy"\)|\('denied', 'fixture\.delete_everything: tool "delete_everything" of server "fixture" is not allowed by the bridge\\'s policy'\)/,
    );
    assert.match(
      value,
      /'unknown-server', 'nowhere.x: no enabled server "nowhere"; available: memory, filesystem, fixture, web-fixture, loop'/,
    );
    assert.match(value, /'unknown-tool', 'fixture.nothing: server "fixture" has no tool "nothing"; its tools: echo, add/);
    assert.match(value, /would start this bridge again/);
  });

  test('a 10 MB tool result is handled', async () => {
    // 10 MB through the server, the bridge and the frame into Python: the most time a loaded machine allows.
    const result = await bridge.call('r = await mcp_fixture.big(size=10_000_000)\n(len(r), r[:3])', { timeout: 60 });
    assert.equal(structured(result).value, "(10000000, 'xxx')", textOf(result));
  });

  test('images from tools reach the model when the code returns them', async () => {
    const result = await bridge.call('r = await mcp_fixture.image()\n[type(x).__name__ for x in r]');
    assert.equal(structured(result).value, "['dict', 'str']");
    assert.equal(result.content.filter((c) => c.type === 'image').length, 0, 'not attached by themselves');
    const returned = await bridge.call('await mcp_fixture.image()');
    assert.equal(returned.content.filter((c) => c.type === 'image').length, 1);
    assert.match(String(structured(returned).value), /'data': '<image image\/png 70 bytes, attached>'/);
  });

  test('server env reaches the server but never the sandbox', async () => {
    const result = await bridge.call('import os\n(await mcp_fixture.env(name="FIXTURE_SECRET"), os.environ.get("FIXTURE_SECRET"))');
    assert.equal(structured(result).value, "('only-for-the-server', None)");
  });

  test('a tool list change is honoured', async () => {
    const result = await bridge.call('await mcp_fixture.grow()\nimport asyncio\nawait asyncio.sleep(1)\nawait mcp_fixture.new_tool()');
    assert.equal(structured(result).value, "'new'", textOf(result));
    const search = await bridge.call('[h["tool"] for h in await search_tool_docs("appeared after grow", limit=1)]');
    assert.equal(structured(search).value, "['new_tool']");
  });

  test('out-of-range or wrong-typed arguments are validation errors that name the field', async () => {
    const tooLong = await bridge.call('1', { timeout: 100_000 });
    assert.equal(tooLong.isError, true);
    assert.match(textOf(tooLong), /timeout: must be at most 60 seconds/);
    const badSession = await bridge.call('1', { session: '../etc' });
    assert.match(textOf(badSession), /session: must be 1-64 letters/);
    const unknownServer = await bridge.call('1', { servers: ['fixture', 'nowhere'] });
    assert.equal(unknownServer.isError, true);
    assert.match(textOf(unknownServer), /Could not start server "nowhere": no enabled server "nowhere"/);
    const started = await bridge.call('[s["status"] for s in discovered_servers() if s["name"] == "filesystem"]', {
      servers: ['filesystem'],
    });
    assert.equal(structured(started).value, "['running']");
    const hugeCode = await bridge.call(`# ${'x'.repeat(MAX_CODE_CHARS)}`);
    assert.equal(hugeCode.isError, true);
    assert.match(textOf(hugeCode), /code: Too big/);
    const wrongType = await bridge.call('1', { reset: 'yes' });
    assert.equal(wrongType.isError, true);
    assert.match(textOf(wrongType), /reset/);
  });

  test('progress notifications are sent during long runs', async () => {
    let notes = 0;
    const result = await bridge.call('import time\ntime.sleep(4.5)\n"done"', {}, { onprogress: () => notes++ });
    assert.equal(structured(result).value, "'done'");
    assert.ok(notes >= 1, `got ${notes} progress notifications`);
  });

  test('cancelling the request stops the run in the container', async () => {
    // The session's container started first: what is cancelled is the run, not a start.
    assert.equal(structured(await bridge.call('0', { session: 'cancel-me' })).status, 'ok');
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 800);
    const started = Date.now();
    await assert.rejects(bridge.call('import time\ntime.sleep(60)', { session: 'cancel-me' }, { signal: abort.signal }));
    const after = await bridge.call('"alive"', { session: 'cancel-me' });
    assert.equal(structured(after).value, "'alive'");
    // A sleep left running would hold the session for 60 s; the bound is loose for a loaded machine.
    assert.ok(Date.now() - started < 40_000);
    const log = await readFile(join(bridge.stateDir, RUN_LOG_FILE), 'utf8');
    const ends = log
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; session: string; status: string })
      .filter((e) => e.type === 'run-end' && e.session === 'cancel-me');
    // The warm-up run, then the cancelled one.
    assert.deepEqual(
      ends.slice(0, 2).map((e) => e.status),
      ['ok', 'cancelled'],
    );
  });

  test('the run log records runs and tool calls as they happen', async () => {
    await bridge.call(
      'await mcp_fixture.echo(message="logged")\ntry:\n    await mcp_fixture.delete_everything()\nexcept ToolError:\n    pass',
      { session: 'audit' },
    );
    const events = (await readFile(join(bridge.stateDir, RUN_LOG_FILE), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const start = events.find((e) => e.type === 'run-start' && e.session === 'audit');
    assert.ok(start);
    const calls = events.filter((e) => e.type === 'tool-call' && e.run === start.run);
    assert.deepEqual(
      calls.map((c) => [c.tool, c.outcome]),
      [
        ['echo', 'ok'],
        ['delete_everything', 'denied'],
      ],
    );
    assert.deepEqual((calls[0]!.arguments as Record<string, unknown>).message, 'logged');
    const end = events.find((e) => e.type === 'run-end' && e.run === start.run);
    assert.equal(end?.toolCalls, 2);
  });

  test('the capability resource lists the servers', async () => {
    const resource = await bridge.client.readResource({ uri: 'code-execution-mode://capabilities' });
    const text = resource.contents.map((c) => ('text' in c ? c.text : '')).join('');
    assert.match(text, /mcp_memory/);
    assert.match(text, /mcp_web_fixture/);
  });
});

test('structuredResults off (as the extension sets it): no outputSchema, no structuredContent, the text as printed', async () => {
  const bridge = await startBridge({ sandbox, structuredResults: false });
  try {
    const { tools } = await bridge.client.listTools();
    assert.equal(tools[0]?.outputSchema, undefined, 'the tool declares no output schema');
    const ok = await bridge.call('print("one\\ntwo \\"three\\"")\n6 * 7');
    assert.equal(ok.structuredContent, undefined);
    assert.equal(textOf(ok), 'one\ntwo "three"\nOut: 42');
    const failed = await bridge.call('1 / 0');
    assert.equal(failed.structuredContent, undefined);
    assert.equal(failed.isError, true);
    assert.match(textOf(failed), /ZeroDivisionError: division by zero$/);
    const refused = await bridge.call('1', { timeout: 10_000 });
    assert.equal(refused.structuredContent, undefined);
    assert.match(textOf(refused), /^InvalidArguments: /);
  } finally {
    await bridge.close();
  }
});

test("a server's own instructions reach discovered_servers(), help() and the capabilities resource, cleaned and capped", async () => {
  // Its words, untrusted: a bidi override and the escape character go (what followed it is plain
  // text then), and a flood is cut.
  const instructions = `Use add for sums.\nNever call fail.\u202e\u001b[31m${'x'.repeat(5000)}`;
  const bridge = await startBridge({
    sandbox,
    servers: { fixture: { command: process.execPath, args: [FIXTURE, '--instructions', instructions] } },
  });
  try {
    const code = [
      'import json',
      'said = [s.get("instructions") for s in discovered_servers() if s["name"] == "fixture"][0]',
      'help(mcp_fixture)',
      'print(json.dumps(said))',
    ].join('\n');
    const result = await bridge.call(code);
    const stdout = String(structured(result).stdout);
    assert.match(stdout, /^The server says:\n {2}Use add for sums\.\n {2}Never call fail\.\[31mx+/m, textOf(result));
    const said = JSON.parse(stdout.trim().split('\n').at(-1)!) as string;
    assert.ok(said.startsWith('Use add for sums.\nNever call fail.[31mxxx'), said.slice(0, 80));
    assert.ok([...said].length <= 2000, `${said.length} characters kept`);
    assert.doesNotMatch(said, /[\u202e\u001b]/);
    const resource = await bridge.client.readResource({ uri: 'code-execution-mode://capabilities' });
    const text = String((resource.contents[0] as { text?: string }).text);
    assert.match(text, /^ {2}> Use add for sums\.$/m);
    assert.match(text, /^ {2}> Never call fail\.\[31mx+/m);
  } finally {
    await bridge.close();
  }
});

test('bad configuration is refused with the field named', async () => {
  const dir = await tempDir('cem-badcfg-');
  const file = join(dir, 'config.json');
  await (await import('node:fs/promises')).writeFile(file, JSON.stringify({ servers: { x: { url: 'not a url' } }, sandbox: { cpus: -1 } }));
  const result = await execa(process.execPath, ['dist/cli.js', '--config', file], { reject: false, input: '' });
  assert.equal(result.exitCode, 2);
  assert.match(result.stderr, /servers\.x\.url/);
  assert.match(result.stderr, /sandbox\.cpus/);
});

test('proxied servers and containers end when the client disconnects', async () => {
  const dir = await tempDir('cem-pid-');
  const pidFile = join(dir, 'fixture.pid');
  const bridge = await startBridge({
    sandbox,
    servers: { fixture: { command: process.execPath, args: [FIXTURE], env: { FIXTURE_PID_FILE: pidFile } } },
  });
  const result = await bridge.call('await mcp_fixture.echo(message="up")', { session: 'bye' });
  assert.equal(structured(result).value, "'up'");
  const pid = Number(await readFile(pidFile, 'utf8'));
  const alive = () => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  assert.equal(alive(), true);
  await bridge.close();
  const deadline = Date.now() + 10_000;
  while (alive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  assert.equal(alive(), false, 'the proxied server outlived the bridge');
});

test('a server that speaks only the legacy SSE transport works, pinned or by fallback', async () => {
  const sse = await startHttpFixture({}, 'sse');
  const bridge = await startBridge({
    sandbox,
    servers: { pinned: { type: 'sse', url: sse.url }, fallback: { url: sse.url } },
  });
  try {
    const result = await bridge.call('(await mcp_pinned.echo(message="a"), await mcp_fallback.add(a=1, b=1))');
    assert.equal(structured(result).value, "('a', {'sum': 2})", textOf(result));
  } finally {
    await bridge.close();
    sse.stop();
  }
});

for (const other of testRuntimes().slice(1)) {
  test(`the bridge also runs on ${other}`, async () => {
    const bridge = await startBridge({
      sandbox: { runtime: other, image: TEST_IMAGE },
      servers: { fixture: { command: process.execPath, args: [FIXTURE] } },
    });
    try {
      const result = await bridge.call('import asyncio\nawait asyncio.gather(mcp_fixture.add(a=1, b=2), mcp_fixture.echo(message="ok"))');
      assert.equal(structured(result).value, "[{'sum': 3}, 'ok']", textOf(result));
    } finally {
      await bridge.close();
    }
  });
}

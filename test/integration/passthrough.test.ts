// MCP beyond tool calls, through the real bridge and a real SDK fixture server: resources,
// resource templates and prompts from Python, a tool's resource_link read back, JSON-RPC errors
// with their code and data, error results' structured content, content annotations and _meta,
// audio, progress and log relays, and HTTP sessions ended with DELETE.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURE, startBridge, startHttpFixture, tempDir, textOf, type BridgeHandle } from '../helpers/bridge.ts';
import { TEST_IMAGE, testRuntimes } from '../helpers/env.ts';
import { until } from '../helpers/wait.ts';

const [runtime = 'podman'] = testRuntimes();
const sandbox = { runtime, image: TEST_IMAGE, memory: '256m', timeoutSeconds: 30, maxTimeoutSeconds: 60 };

describe(`MCP passthrough on ${runtime}`, () => {
  let bridge: BridgeHandle;

  before(async () => {
    bridge = await startBridge({
      sandbox,
      servers: {
        fixture: { command: process.execPath, args: [FIXTURE] },
        memory: { command: process.execPath, args: ['-e', 'process.exit(0)'], enabled: false },
      },
    });
  });
  after(async () => {
    await bridge?.close();
  });

  test('resources, templates and prompts are listed, read and filled in', async () => {
    const result = await bridge.call(
      [
        'res = await list_resources("fixture")',
        'tpl = await list_resource_templates("fixture")',
        'text = await read_resource("fixture", "fixture://readme")',
        'blob = await read_resource("fixture", "fixture://pixel.png")',
        'note = await read_resource("fixture", "fixture://notes/42")',
        'prompts = await list_prompts("fixture")',
        'prompt = await get_prompt("fixture", "greet", {"who": "Ada"})',
        'import base64, json',
        'print(json.dumps({"uris": sorted(r["uri"] for r in res), "title": [r.get("title") for r in res if r["name"] == "readme"][0],',
        '  "templates": [t["uriTemplate"] for t in tpl], "text": text[0]["text"], "mime": text[0]["mimeType"],',
        '  "png": base64.b64decode(blob[0]["blob"])[:4].hex(), "note": note[0]["text"],',
        '  "prompts": [(p["name"], p.get("title"), [a["name"] for a in p.get("arguments", [])]) for p in prompts],',
        '  "messages": prompt["messages"], "description": prompt.get("description")}))',
      ].join('\n'),
    );
    assert.ok(!result.isError, textOf(result));
    const line = textOf(result)
      .split('\n')
      .find((l) => l.startsWith('{'));
    assert.ok(line, textOf(result));
    const got = JSON.parse(line);
    assert.deepEqual(got.uris, ['fixture://pixel.png', 'fixture://readme']);
    assert.equal(got.title, 'Read me');
    assert.deepEqual(got.templates, ['fixture://notes/{id}']);
    assert.equal(got.text, 'hello from the fixture resource');
    assert.equal(got.mime, 'text/plain');
    assert.equal(got.png, '89504e47');
    assert.equal(got.note, 'note 42');
    assert.deepEqual(got.prompts, [['greet', 'Greeting', ['who']]]);
    assert.deepEqual(got.messages, [{ role: 'user', content: { type: 'text', text: 'Say hello to Ada' } }]);
    assert.equal(got.description, 'a greeting');
  });

  test('a resource_link a tool returns can be read', async () => {
    const result = await bridge.call(
      [
        'link = await mcp_fixture.link()',
        'contents = await read_resource("fixture", link["uri"])',
        'print(link["type"], contents[0]["text"])',
      ].join('\n'),
    );
    assert.ok(!result.isError, textOf(result));
    assert.match(textOf(result), /resource_link hello from the fixture resource/);
  });

  test('errors are ToolErrors with a kind; disabled and unknown servers are refused', async () => {
    const result = await bridge.call(
      [
        'out = []',
        'for server, uri in (("fixture", "fixture://missing"), ("memory", "x://y"), ("nope", "x://y")):',
        '    try:',
        '        await read_resource(server, uri)',
        '        out.append("read")',
        '    except ToolError as e:',
        '        out.append(e.kind)',
        'try:',
        '    await get_prompt("fixture", "no-such-prompt")',
        'except ToolError as e:',
        '    out.append(e.kind)',
        'print(out)',
        'print("list_resources" in capability_summary())',
      ].join('\n'),
    );
    assert.ok(!result.isError, textOf(result));
    const lines = textOf(result).split('\n');
    const kinds = lines.find((l) => l.startsWith('['));
    assert.ok(kinds, textOf(result));
    // A missing resource or prompt is the server's JSON-RPC error, not an unknown server.
    assert.equal(kinds, "['server-error', 'unknown-server', 'unknown-server', 'server-error']");
    assert.ok(lines.includes('True'), textOf(result));
  });

  test('a JSON-RPC error from a tool keeps its code and data, said once', async () => {
    const result = await bridge.call(
      [
        'import json',
        'try:',
        '    await mcp_fixture.needs_url()',
        'except ToolError as e:',
        '    print(json.dumps({"kind": e.kind, "code": e.code, "data": e.data, "message": str(e)}))',
        'try:',
        '    await mcp_fixture.fail()',
        'except ToolError as e:',
        '    print(json.dumps({"kind": e.kind, "code": e.code}))',
      ].join('\n'),
    );
    assert.ok(!result.isError, textOf(result));
    const [first, second] = textOf(result)
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));
    assert.equal(first.kind, 'server-error');
    assert.equal(first.code, -32042);
    assert.deepEqual(first.data, {
      elicitations: [{ mode: 'url', message: 'Sign in first', url: 'https://auth.example.test/start?x=1', elicitationId: 'e-1' }],
    });
    assert.equal(first.message.match(/MCP error -32042/g)?.length, 1, first.message);
    assert.match(first.message, /sign in at the URL/);
    assert.deepEqual(second, { kind: 'tool-error', code: null });
  });

  test('an error result keeps its structured content and items; annotations and _meta reach Python', async () => {
    const result = await bridge.call(
      [
        'import json',
        'out = {}',
        'try:',
        '    await mcp_fixture.fail_structured()',
        'except ToolError as e:',
        '    out["error"] = {"kind": e.kind, "structured": e.structured, "content": e.content, "message": str(e)}',
        'plain = await mcp_fixture.annotated()',
        'out["plain"] = [plain[0], plain[1]["annotations"]]',
        'raw = await call_tool("fixture", "annotated", raw=True)',
        'out["raw"] = {"text": raw["content"][0], "meta": raw.get("_meta"), "isError": raw["isError"]}',
        'rawerr = await call_tool("fixture", "fail_structured", raw=True)',
        'out["rawerr"] = [rawerr["isError"], rawerr["structuredContent"]]',
        'doc = (await query_tool_docs("fixture", "annotated", detail="full"))[0]',
        'out["doc"] = [doc.get("title"), doc.get("annotations")]',
        'out["help"] = mcp_fixture.annotated.__doc__.splitlines()[:4]',
        'print(json.dumps(out))',
      ].join('\n'),
    );
    assert.ok(!result.isError, textOf(result));
    const line = textOf(result)
      .split('\n')
      .find((l) => l.startsWith('{'));
    assert.ok(line, textOf(result));
    const got = JSON.parse(line);
    assert.equal(got.error.kind, 'tool-error');
    assert.deepEqual(got.error.structured, { retryAfter: 30, reason: 'quota' });
    assert.deepEqual(got.error.content, [{ type: 'text', text: 'quota exceeded', _meta: { 'fixture/why': 'quota' } }]);
    assert.match(got.error.message, /quota exceeded/);
    // The plain value stays plain text; non-text items keep their annotations.
    assert.equal(got.plain[0], 'for the user');
    assert.deepEqual(got.plain[1], { audience: ['assistant'] });
    assert.deepEqual(got.raw, {
      text: { type: 'text', text: 'for the user', annotations: { audience: ['user'], priority: 0.9 }, _meta: { 'fixture/id': 7 } },
      meta: { 'fixture/result': true },
      isError: false,
    });
    assert.deepEqual(got.rawerr, [true, { retryAfter: 30, reason: 'quota' }]);
    assert.deepEqual(got.doc, ['Annotated content', { readOnlyHint: true, destructiveHint: false }]);
    assert.deepEqual(got.help, ['Annotated content', 'Content with annotations and _meta', '', 'Hints from the server: read-only']);
  });

  test('audio a tool returns is attached when the code returns it, like an image', async () => {
    const kept = await bridge.call('sound = await mcp_fixture.audio()\nprint(sound["mimeType"])');
    assert.ok(!kept.isError, textOf(kept));
    assert.equal(kept.content.filter((c) => c.type === 'audio').length, 0, 'not attached unless returned');
    const returned = await bridge.call('sound = await mcp_fixture.audio()\nsound');
    assert.ok(!returned.isError, textOf(returned));
    const audio = returned.content.filter((c) => c.type === 'audio');
    assert.equal(audio.length, 1, JSON.stringify(returned.content).slice(0, 500));
    assert.equal(audio[0]!.type === 'audio' && audio[0]!.mimeType, 'audio/wav');
    assert.match(textOf(returned), /<audio audio\/wav \d+ bytes, attached>/);
  });

  test("a proxied tool's progress is relayed in the run's progress, and its log messages as the bridge's", async () => {
    const logs: Array<{ level: string; logger?: string; data: unknown }> = [];
    bridge.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n.params));
    const progress: Array<{ progress: number; message?: string }> = [];
    const result = await bridge.call(
      'print(await mcp_fixture.report(steps=4, gap=300, logs=3))',
      {},
      { onprogress: (p) => void progress.push(p) },
    );
    assert.ok(!result.isError, textOf(result));
    assert.match(textOf(result), /had a token/);
    const relayed = progress.filter((p) => p.message?.startsWith('fixture.report: '));
    assert.ok(relayed.length >= 3, JSON.stringify(progress));
    assert.ok(
      relayed.some((p) => p.message === 'fixture.report: step 4 (4/4)') ||
        relayed.some((p) => /step [34] \([34]\/4\)/.test(p.message ?? '')),
      JSON.stringify(relayed),
    );
    for (let i = 1; i < progress.length; i++)
      assert.ok(progress[i]!.progress > progress[i - 1]!.progress, `progress must increase: ${JSON.stringify(progress)}`);
    // The log messages arrive as the bridge's own, named by the server.
    const deadline = Date.now() + 5000;
    while (logs.filter((l) => l.logger === 'fixture/reporter').length < 3 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    const mine = logs.filter((l) => l.logger === 'fixture/reporter');
    assert.deepEqual(
      mine.map((l) => [l.level, l.data]),
      [
        ['warning', 'log line 1'],
        ['warning', 'log line 2'],
        ['warning', 'log line 3'],
      ],
    );
  });

  test("a server's log flood is cut to a few a second, and the cut said when the second is over, though nothing follows", async () => {
    const logs: Array<{ level: string; logger?: string; data: unknown }> = [];
    bridge.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n.params));
    const result = await bridge.call('print(await mcp_fixture.report(steps=1, gap=10, logs=40))');
    assert.ok(!result.isError, textOf(result));
    const notes = () =>
      logs
        .flatMap((l) => (typeof l.data === 'string' ? [/^(\d+) log messages of server fixture dropped/.exec(l.data)] : []))
        .filter(Boolean);
    const reporter = () => logs.filter((l) => l.logger === 'fixture/reporter');
    // Every one of the 40 is accounted for: relayed, or counted in a note (a burst may straddle two seconds).
    const accounted = () => reporter().length + notes().reduce((sum, m) => sum + Number(m![1]), 0);
    await until('every log line relayed or said dropped', () => accounted() === 40 && { accounted: accounted() });
    assert.ok(reporter().length <= 20, `relayed ${reporter().length}`);
    assert.ok(notes().length >= 1, JSON.stringify(logs.slice(-3)));
  });
});

describe('HTTP sessions', () => {
  test('a Streamable HTTP session is ended with DELETE when the bridge closes', async () => {
    const dir = await tempDir('cem-sessions-');
    const sessionLog = join(dir, 'sessions.log');
    await writeFile(sessionLog, '');
    const fixture = await startHttpFixture({ FIXTURE_SESSION_LOG: sessionLog });
    try {
      const bridge = await startBridge({ sandbox, servers: { remote: { url: fixture.url } } });
      try {
        const result = await bridge.call('print(await mcp_remote.echo(message="over http"))');
        assert.ok(!result.isError, textOf(result));
        assert.match(textOf(result), /over http/);
      } finally {
        await bridge.close();
      }
      const deadline = Date.now() + 8000;
      let lines: string[] = [];
      for (;;) {
        lines = (await readFile(sessionLog, 'utf8')).split('\n').filter(Boolean);
        if (lines.some((l) => l.startsWith('delete ')) || Date.now() > deadline) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const opened = lines.filter((l) => l.startsWith('open ')).map((l) => l.slice(5));
      const deleted = lines.filter((l) => l.startsWith('delete ')).map((l) => l.slice(7));
      assert.equal(opened.length, 1, lines.join('\n'));
      assert.deepEqual(deleted, opened, lines.join('\n'));
    } finally {
      fixture.stop();
    }
  });
});

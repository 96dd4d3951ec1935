// The proxied servers' resources, resource templates and prompts re-exposed on the bridge's own
// MCP server (the real bridge, the SDK client, server-everything and a fixture server): listed
// with server prefixes after the capability resource, read and filled in through the owner,
// prompts with their arguments, list_changed relayed, disabled and unconsented servers left out
// (until the user allows one),
// and the caps on listings, reads and prompt arguments (also under concurrency). Also: proxied
// tools' title, annotations, outputSchema, icons and _meta as sandboxed code sees them.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { ResourceListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { RUN_LOG_FILE } from '../../src/state/run-log/files.ts';
import { MEMORY_SERVER, startBridge, tempDir, textOf, type BridgeHandle } from '../helpers/bridge.ts';
import { TEST_IMAGE, testRuntimes } from '../helpers/env.ts';
import { quietFor, until } from '../helpers/wait.ts';
import { fixtureProgram } from '../helpers/fixtures.ts';

const EVERYTHING = resolve('node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const EVERYTHING_DOCS = resolve('node_modules/@modelcontextprotocol/server-everything/dist/docs');
const EXPOSURE = fixtureProgram('exposure');
const PREFIX = 'code-execution-mode://server/';
const [runtime = 'podman'] = testRuntimes();
const sandbox = { runtime, image: TEST_IMAGE, memory: '256m', timeoutSeconds: 30, maxTimeoutSeconds: 60 };

function events(stateDir: string): Array<Record<string, unknown>> {
  const file = join(stateDir, RUN_LOG_FILE);
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

// The same whichever sandbox runs the code: the first runtime and WebAssembly.
for (const { label, sandbox: shown } of [
  { label: runtime, sandbox },
  { label: 'wasm', sandbox: { backend: 'wasm', memory: '256m', timeoutSeconds: 30, maxTimeoutSeconds: 60 } },
]) {
  describe(`proxied resources and prompts on the bridge's own server (${label})`, () => {
    let bridge: BridgeHandle;
    let requestsFile: string;
    let decisionsFile: string;
    let changes = 0;

    before(async () => {
      const dir = await tempDir('cem-exposure-');
      requestsFile = join(dir, 'consent-requests.json');
      decisionsFile = join(dir, 'consent.json');
      bridge = await startBridge({
        sandbox: shown,
        servers: {
          everything: { command: process.execPath, args: [EVERYTHING, 'stdio'] },
          memory: { command: process.execPath, args: [MEMORY_SERVER], env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') } },
          meta: { command: process.execPath, args: [EXPOSURE] },
          off: { command: process.execPath, args: [EXPOSURE], enabled: false },
          pending: { command: process.execPath, args: [EXPOSURE] },
        },
        consent: { decisionsFile, requestsFile, servers: { pending: '0123456789abcdef' } },
      });
      bridge.client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
        changes++;
      });
    });
    after(async () => {
      await bridge?.close();
    });

    test('resources are listed after the capability resource, prefixed with their server', async () => {
      const { resources } = await bridge.client.listResources();
      assert.deepEqual(resources[0], {
        uri: 'code-execution-mode://capabilities',
        name: 'capabilities',
        description: 'The proxied servers and the Python API of the sandbox',
        mimeType: 'text/markdown',
      });
      const docs = resources.filter((r) => r.uri.startsWith(`${PREFIX}everything/demo://resource/static/document/`));
      assert.equal(docs.length, readdirSync(EVERYTHING_DOCS).length);
      for (const doc of docs) {
        assert.match(doc.name, /^everything\./);
        assert.match(doc.title ?? '', /^everything: /);
      }
      assert.deepEqual(
        resources.filter((r) => r.uri.startsWith(`${PREFIX}meta/`)).map((r) => [r.uri, r.name, r.title]),
        [
          [`${PREFIX}meta/flood://item/0`, 'meta.item-0', 'meta: item-0'],
          [`${PREFIX}meta/flood://item/1`, 'meta.item-1', 'meta: item-1'],
          [`${PREFIX}meta/flood://item/2`, 'meta.item-2', 'meta: item-2'],
          [`${PREFIX}meta/flood://big`, 'meta.big', 'meta: big'],
        ],
      );
      // server-memory's knowledge graph too; none of the disabled or unconsented servers.
      assert.ok(resources.some((r) => r.uri === `${PREFIX}memory/memory://knowledge-graph`));
      const owners = new Set(resources.slice(1).map((r) => r.uri.slice(PREFIX.length).split('/')[0]));
      assert.deepEqual([...owners].sort(), ['everything', 'memory', 'meta']);
    });

    test('a read goes to the owner and comes back under the exposed URI, in the run log', async () => {
      const uri = `${PREFIX}everything/demo://resource/static/document/architecture.md`;
      const { contents } = await bridge.client.readResource({ uri });
      assert.equal(contents.length, 1);
      assert.equal(contents[0]!.uri, uri);
      assert.equal((contents[0] as { text: string }).text, readFileSync(join(EVERYTHING_DOCS, 'architecture.md'), 'utf8'));
      const logged = await until('the logged read', () =>
        events(bridge.stateDir).find(
          (e) =>
            e.type === 'tool-call' &&
            e.server === 'everything' &&
            e.tool === 'read_resource demo://resource/static/document/architecture.md',
        ),
      );
      assert.equal(logged.outcome, 'ok');
      const start = events(bridge.stateDir).find((e) => e.type === 'run-start' && e.run === logged.run);
      assert.equal(start?.session, 'client');
      // An unknown URI is refused as before, and the upstream's error comes back for a missing one.
      // Its code said once: the client adds "MCP error -32602: " to the bare text the bridge sends.
      await assert.rejects(
        bridge.client.readResource({ uri: 'file:///etc/passwd' }),
        /^McpError: MCP error -32602: Resource file:\/\/\/etc\/passwd not found$/,
      );
      await assert.rejects(bridge.client.readResource({ uri: `${PREFIX}meta/flood://nothing` }), /flood:\/\/nothing/);
    });

    test('templates are listed under the prefix, and a filled-in one is read from the owner', async () => {
      const { resourceTemplates } = await bridge.client.listResourceTemplates();
      const text = resourceTemplates.find((t) => t.uriTemplate === `${PREFIX}everything/demo://resource/dynamic/text/{resourceId}`);
      assert.ok(text, JSON.stringify(resourceTemplates.map((t) => t.uriTemplate)));
      assert.match(text.name, /^everything\./);
      assert.ok(resourceTemplates.some((t) => t.uriTemplate === `${PREFIX}meta/flood://tpl/0/{id}`));
      const uri = text.uriTemplate.replace('{resourceId}', '7');
      const { contents } = await bridge.client.readResource({ uri });
      assert.equal(contents[0]!.uri, uri);
      assert.match((contents[0] as { text: string }).text, /^Resource 7: This is a plaintext resource/);
      const filled = await bridge.client.readResource({ uri: `${PREFIX}meta/flood://tpl/0/abc` });
      assert.equal((filled.contents[0] as { text: string }).text, 'template 0 id abc');
    });

    test('prompts are <server>.<prompt>, their arguments forwarded, their resources readable', async () => {
      const { prompts } = await bridge.client.listPrompts();
      const names = prompts.map((p) => p.name);
      assert.ok(names.includes('everything.simple-prompt'), names.join(', '));
      assert.ok(names.includes('meta.summarize'), names.join(', '));
      assert.ok(
        names.every((n) => n.startsWith('everything.') || n.startsWith('meta.')),
        names.join(', '),
      );
      const args = prompts.find((p) => p.name === 'everything.args-prompt');
      assert.deepEqual(
        args?.arguments?.map((a) => a.name),
        ['city', 'state'],
      );
      assert.match(args?.title ?? '', /^everything: /);
      const got = await bridge.client.getPrompt({ name: 'everything.args-prompt', arguments: { city: 'Lisbon', state: 'Estremadura' } });
      const said = JSON.stringify(got.messages);
      assert.match(said, /Lisbon/);
      assert.match(said, /Estremadura/);
      const summary = await bridge.client.getPrompt({ name: 'meta.summarize', arguments: { topic: 'tides' } });
      assert.deepEqual(summary.messages[0]!.content, { type: 'text', text: 'Summarize tides' });
      const link = summary.messages[1]!.content as { type: string; uri: string };
      assert.equal(link.uri, `${PREFIX}meta/flood://item/0`);
      const linked = await bridge.client.readResource({ uri: link.uri });
      assert.equal((linked.contents[0] as { text: string }).text, 'item 0');
      // A missing required argument: the server's own refusal comes back.
      await assert.rejects(bridge.client.getPrompt({ name: 'meta.summarize', arguments: {} }), /topic/);
      await assert.rejects(bridge.client.getPrompt({ name: 'nobody.summarize' }), /not found/);
    });

    test('a disabled or unconsented server is not exposed, and listing does not ask for consent', async () => {
      const { prompts } = await bridge.client.listPrompts();
      assert.ok(!prompts.some((p) => p.name.startsWith('pending.') || p.name.startsWith('off.')));
      const { resourceTemplates } = await bridge.client.listResourceTemplates();
      assert.ok(!resourceTemplates.some((t) => t.uriTemplate.startsWith(`${PREFIX}pending/`) || t.uriTemplate.startsWith(`${PREFIX}off/`)));
      await assert.rejects(bridge.client.readResource({ uri: `${PREFIX}pending/flood://item/0` }), /not exposed/);
      await assert.rejects(bridge.client.readResource({ uri: `${PREFIX}off/flood://item/0` }), /not exposed/);
      await assert.rejects(bridge.client.getPrompt({ name: 'pending.summarize', arguments: { topic: 'x' } }), /not exposed/);
      assert.equal(existsSync(requestsFile), false, 'a consent request was written');
    });

    test("an upstream list_changed is relayed as the bridge's own", async () => {
      // Every server started (by this listing, if not before) has said so already.
      await bridge.client.listResources();
      // Their list_changed may still be on the way and nothing marks the last one: a quiet spell
      // before counting, so that the one counted is the gzip's.
      await quietFor(800);
      changes = 0;
      const result = await bridge.call(
        'r = await mcp_everything.gzip_file_as_resource(name="hello.txt", data="data:text/plain;base64,aGVsbG8gd29ybGQ=")\nprint(r)',
      );
      assert.ok(!result.isError, textOf(result));
      await until('a resources/list_changed', () => changes > 0);
      const { resources } = await bridge.client.listResources();
      const session = resources.find((r) => r.uri === `${PREFIX}everything/demo://resource/session/hello.txt`);
      assert.ok(session, JSON.stringify(resources.map((r) => r.uri)));
      const { contents } = await bridge.client.readResource({ uri: session.uri });
      assert.ok('blob' in contents[0]! && contents[0].blob.length > 0);
    });

    test("proxied tools' title, annotations, outputSchema, icons and _meta reach the docs, search hits and help()", async () => {
      const result = await bridge.call(
        [
          'import contextlib, io, json',
          'full = (await query_tool_docs("meta", "wipe", detail="full"))[0]',
          'hits = [h for h in await search_tool_docs("wipe delete every item", limit=5) if h["tool"] == "wipe"]',
          'echo = (await query_tool_docs("everything", "echo"))[0]',
          'structured = (await query_tool_docs("everything", "get-structured-content", detail="full"))[0]',
          'out = io.StringIO()',
          'with contextlib.redirect_stdout(out):',
          '    help(mcp_meta.wipe)',
          'print(json.dumps({"full": full, "hit": hits[0] if hits else None, "echo": echo, "structured": structured, "help": out.getvalue()}))',
        ].join('\n'),
      );
      assert.ok(!result.isError, textOf(result));
      const line = textOf(result)
        .split('\n')
        .find((l) => l.startsWith('{'));
      assert.ok(line, textOf(result));
      const got = JSON.parse(line) as Record<string, Record<string, unknown> & { help?: never }> & { help: string };
      const full = got.full!;
      assert.equal(full.title, 'Wipe everything');
      assert.equal(full.hint, 'destructive');
      assert.deepEqual(full.annotations, { destructiveHint: true, readOnlyHint: false });
      assert.deepEqual((full.outputSchema as { required: string[] }).required, ['deleted']);
      assert.deepEqual(full.icons, [{ src: `data:image/png;base64,${TINY_PNG}`, mimeType: 'image/png', sizes: ['1x1'] }]);
      assert.equal(got.hit?.hint, 'destructive');
      assert.deepEqual(full._meta, { 'example.com/owner': 'team-a' });
      assert.equal(got.hit?.icons, undefined, 'summaries stay short');
      assert.equal(got.hit?._meta, undefined);
      assert.equal(got.echo?.hint, 'read-only');
      assert.equal(got.structured?.title, 'Get Structured Content Tool');
      assert.ok(got.structured?.outputSchema);
      assert.match(got.help, /Wipe everything/);
      assert.match(got.help, /Hints from the server: destructive/);
      assert.match(got.help, /Returns: .*deleted/);
    });

    test('a server the user allows is exposed from then on, and the client is told', async () => {
      // As above: earlier list_changed may still be on the way; the one counted must be the allowing's.
      await quietFor(800);
      changes = 0;
      await writeFile(decisionsFile, JSON.stringify({ version: 1, allowed: ['0123456789abcdef'], denied: [] }));
      await until('a resources/list_changed', () => changes > 0);
      const { resources } = await bridge.client.listResources();
      assert.ok(
        resources.some((r) => r.uri === `${PREFIX}pending/flood://item/0`),
        JSON.stringify(resources.map((r) => r.uri)),
      );
      const { contents } = await bridge.client.readResource({ uri: `${PREFIX}pending/flood://item/1` });
      assert.equal((contents[0] as { text: string }).text, 'item 1');
    });
  });
}

const TINY_PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

describe('the caps on what the bridge re-exposes', () => {
  let bridge: BridgeHandle;

  before(async () => {
    bridge = await startBridge({
      sandbox,
      servers: {
        // 31 resources each of the first two (62 > maxListedItems); 10 templates of 6000-character
        // descriptions each of all five (50 items, about 300 KiB together > maxResultBytes). One
        // server's answer stays well under the cap: the stdio transport's own cap counts what it
        // buffers, which may be one answer and the next read from the pipe.
        flood1: {
          command: process.execPath,
          args: [EXPOSURE, '--resources', '30', '--templates', '10', '--template-chars', '6000', '--big', '300000'],
        },
        flood2: { command: process.execPath, args: [EXPOSURE, '--resources', '30', '--templates', '10', '--template-chars', '6000'] },
        flood3: { command: process.execPath, args: [EXPOSURE, '--resources', '0', '--templates', '10', '--template-chars', '6000'] },
        flood4: { command: process.execPath, args: [EXPOSURE, '--resources', '0', '--templates', '10', '--template-chars', '6000'] },
        flood5: { command: process.execPath, args: [EXPOSURE, '--resources', '0', '--templates', '10', '--template-chars', '6000'] },
      },
      proxy: { maxListedItems: 50, maxResultBytes: 256 * 1024, maxArgumentBytes: 2048 },
    });
  });
  after(async () => {
    await bridge?.close();
  });

  test('a listing stops at proxy.maxListedItems, in configuration order, also when asked concurrently', async () => {
    const listings = await Promise.all([1, 2, 3, 4].map(() => bridge.client.listResources()));
    for (const { resources } of listings) {
      assert.equal(resources.length, 1 + 50);
      assert.equal(resources[0]!.uri, 'code-execution-mode://capabilities');
      const proxied = resources.slice(1);
      // flood1's 31 (30 items and its big one) first, then what is left of flood2's; flood3-5 have only their big one.
      assert.equal(proxied.filter((r) => r.uri.startsWith(`${PREFIX}flood1/`)).length, 31);
      assert.equal(proxied.filter((r) => r.uri.startsWith(`${PREFIX}flood2/`)).length, 19);
    }
    assert.match(bridge.stderr(), /left out of the listing to the client \(proxy\.maxListedItems 50/);
  });

  test('a listing stops at proxy.maxResultBytes in all, also when asked concurrently', async () => {
    const listings = await Promise.all([1, 2, 3].map(() => bridge.client.listResourceTemplates()));
    for (const { resourceTemplates } of listings) {
      assert.ok(resourceTemplates.length < 50 && resourceTemplates.length > 30, `${resourceTemplates.length}\n${bridge.stderr()}`);
      assert.ok(Buffer.byteLength(JSON.stringify(resourceTemplates)) <= 256 * 1024);
      assert.equal(resourceTemplates.filter((t) => t.uriTemplate.startsWith(`${PREFIX}flood1/`)).length, 10);
    }
  });

  test('a read over proxy.maxResultBytes fails with the cap named, concurrently too; the server serves again', async () => {
    const big = `${PREFIX}flood1/flood://big`;
    const reads = await Promise.allSettled([1, 2, 3].map(() => bridge.client.readResource({ uri: big })));
    for (const read of reads) {
      assert.equal(read.status, 'rejected');
      assert.match(String(read.reason), /maxResultBytes/);
    }
    // Its connection was closed for the oversize message; the next use starts it again (with backoff).
    let text = '';
    for (let attempt = 0; attempt < 20 && !text; attempt++) {
      try {
        const { contents } = await bridge.client.readResource({ uri: `${PREFIX}flood1/flood://item/3` });
        text = (contents[0] as { text: string }).text;
      } catch {
        await sleep(500);
      }
    }
    assert.equal(text, 'item 3');
  });

  test("a prompt's arguments over proxy.maxArgumentBytes are refused before they are sent", async () => {
    await assert.rejects(bridge.client.getPrompt({ name: 'flood1.summarize', arguments: { topic: 'x'.repeat(5000) } }), /maxArgumentBytes/);
    const ok = await bridge.client.getPrompt({ name: 'flood1.summarize', arguments: { topic: 'x' } });
    assert.equal((ok.messages[0]!.content as { text: string }).text, 'Summarize x');
  });
});

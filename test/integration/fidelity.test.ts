// How much of MCP survives the bridge: the reference server-everything over stdio, Streamable
// HTTP and SSE (on loopback only), behind the real bridge process and a real container, with an
// SDK client on the bridge's side that declares roots, elicitation (form and URL) and sampling
// and answers them; then a client that declares none. For each feature: what Python gets and
// what the bridge's client gets. A small fixture asks whatever the client declared, for the
// refusals, the caps, the relay timeout and the run's clock.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CreateMessageRequestSchema,
  ElicitationCompleteNotificationSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  type CallToolResult,
  type ClientCapabilities,
  type CreateMessageRequest,
  type ElicitRequest,
  type ElicitResult,
  type Progress,
  type Root,
} from '@modelcontextprotocol/sdk/types.js';
import { RUN_LOG_FILE } from '../../src/state/run-log/writer.ts';
import { structured, tempDir, textOf } from '../helpers/bridge.ts';
import { testRuntimes, testSandbox } from '../helpers/env.ts';
import { sleep, until } from '../helpers/wait.ts';
import { fixtureProgram } from '../helpers/fixtures.ts';

const [runtime = 'podman'] = testRuntimes();
const EVERYTHING = resolve('node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const LOOPBACK = pathToFileURL(resolve('test/helpers/loopback-listen.mjs')).href;
const RELAY_FIXTURE = fixtureProgram('relay');

type Kind = 'stdio' | 'streamableHttp' | 'sse';

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => (typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port'))));
    });
  });
}

/** server-everything over HTTP, bound to 127.0.0.1 by the preload. */
async function startEverything(kind: 'streamableHttp' | 'sse'): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', LOOPBACK, EVERYTHING, kind], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((ready, fail) => {
    let seen = '';
    const timer = setTimeout(() => fail(new Error(`server-everything (${kind}) did not start: ${seen}`)), 20_000);
    child.stderr?.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (/port \d+/i.test(seen)) {
        clearTimeout(timer);
        ready();
      }
    });
    child.once('exit', (code) => fail(new Error(`server-everything exited (${code}): ${seen}`)));
  });
  return { url: `http://127.0.0.1:${port}/${kind === 'sse' ? 'sse' : 'mcp'}`, child };
}

interface Harness {
  client: Client;
  stateDir: string;
  stderr: () => string;
  elicitations: ElicitRequest['params'][];
  samplings: CreateMessageRequest['params'][];
  rootsAsked: number;
  /** elicitationIds the client was told are complete. */
  completed: string[];
  logs: { logger?: string | undefined; data: unknown }[];
  roots: Root[];
  answer: (params: ElicitRequest['params']) => Promise<ElicitResult> | ElicitResult;
  run(
    code: string,
    extra?: Record<string, unknown>,
    onprogress?: (p: Progress) => void,
  ): Promise<{ result: CallToolResult; data: Record<string, unknown> }>;
  relayEvents(): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

/** The first form field's first allowed value, or a string: an answer the form accepts. */
function fill(params: ElicitRequest['params']): ElicitResult {
  if (params.mode === 'url') return { action: 'accept' };
  const content: Record<string, string | number | boolean> = {};
  for (const [key, field] of Object.entries(params.requestedSchema.properties)) {
    const f = field as { type?: string; oneOf?: { const: string }[]; enum?: string[]; format?: string };
    if (f.oneOf?.[0]) content[key] = f.oneOf[0].const;
    else if (f.enum?.[0]) content[key] = f.enum[0];
    else if (f.type === 'boolean') content[key] = true;
    else if (f.type === 'number' || f.type === 'integer') content[key] = 1;
    else if (f.format === 'email') content[key] = 'ada@example.com';
    else if (f.format === 'date') content[key] = '2026-01-01';
    else if (f.format === 'uri') content[key] = 'https://example.com';
    else if (f.format === 'date-time') content[key] = '2026-01-01T00:00:00Z';
    else if (f.type === 'string') content[key] = 'Ada';
  }
  return { action: 'accept', content };
}

async function start(
  servers: Record<string, unknown>,
  capabilities: ClientCapabilities,
  extra: Record<string, unknown> = {},
): Promise<Harness> {
  const dir = await tempDir('cem-fidelity-');
  const stateDir = join(dir, 'state');
  const configFile = join(dir, 'config.json');
  await writeFile(
    configFile,
    JSON.stringify({ stateDir, servers, sandbox: { ...testSandbox(runtime), prewarm: false, maxTimeoutSeconds: 60 }, ...extra }),
  );
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [resolve('dist/cli.js'), '--config', configFile],
    env: process.env as Record<string, string>,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: 'fidelity-test', version: '1.0.0' }, { capabilities });
  const h: Harness = {
    client,
    stateDir,
    stderr: () => stderr,
    elicitations: [],
    samplings: [],
    rootsAsked: 0,
    completed: [],
    logs: [],
    roots: [{ uri: 'file:///tmp/fidelity-a', name: 'fidelity-a' }],
    answer: fill,
    async run(code, extraArgs = {}, onprogress) {
      const result = (await client.callTool({ name: 'run_python', arguments: { code, ...extraArgs } }, undefined, {
        timeout: 120_000,
        ...(onprogress ? { onprogress } : {}),
      })) as CallToolResult;
      return { result, data: structured(result) };
    },
    async relayEvents() {
      const text = await readFile(join(stateDir, RUN_LOG_FILE), 'utf8').catch(() => '');
      return text
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((e) => e.type === 'relay');
    },
    close: () => client.close(),
  };
  if (capabilities.roots) {
    client.setRequestHandler(ListRootsRequestSchema, () => {
      h.rootsAsked++;
      return { roots: h.roots };
    });
  }
  if (capabilities.elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      h.elicitations.push(request.params);
      return h.answer(request.params);
    });
  }
  if (capabilities.sampling) {
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      h.samplings.push(request.params);
      return {
        model: 'fidelity-model',
        role: 'assistant',
        content: { type: 'text', text: `sampled ${request.params.messages.length} message(s)` },
      };
    });
  }
  client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => void h.completed.push(n.params.elicitationId));
  client.setNotificationHandler(
    LoggingMessageNotificationSchema,
    (n) => void h.logs.push({ logger: n.params.logger, data: n.params.data }),
  );
  await client.connect(transport);
  return h;
}

const FULL: ClientCapabilities = { roots: { listChanged: true }, elicitation: { form: {}, url: {} }, sampling: {} };

/** Python that calls every feature of server-everything ("ev") and prints one JSON line. */
const MATRIX_CODE = `
import json
out = {}
async def grab(key, tool, args):
    try:
        out[key] = await call_tool("ev", tool, args)
    except ToolError as e:
        out[key] = {"error": str(e), "kind": getattr(e, "kind", None), "code": getattr(e, "code", None), "data": getattr(e, "data", None)}
await grab("roots", "get-roots-list", {})
await grab("elicit", "trigger-elicitation-request", {})
await grab("sample", "trigger-sampling-request", {"prompt": "hello", "maxTokens": 5})
await grab("url", "trigger-url-elicitation", {"url": "https://example.com/next", "errorPath": True})
await grab("progress", "trigger-long-running-operation", {"duration": 1, "steps": 2})
await grab("task", "simulate-research-query", {"topic": "bees", "ambiguous": True})
await grab("annotated", "get-annotated-message", {"messageType": "error"})
await grab("bad", "get-sum", {"a": "x", "b": 1})
res = await list_resources("ev")
out["resources"] = len(res)
out["read"] = (await read_resource("ev", res[0]["uri"]))[0].get("uri")
out["prompts"] = sorted(p["name"] for p in await list_prompts("ev"))
print("JSON" + json.dumps(out, default=str))
`;

function matrixOf(result: CallToolResult): Record<string, unknown> {
  const line = textOf(result)
    .split('\n')
    .find((l) => l.startsWith('JSON'));
  assert.ok(line, textOf(result));
  return JSON.parse(line.slice(4)) as Record<string, unknown>;
}

const text = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

for (const kind of ['stdio', 'streamableHttp', 'sse'] as const satisfies readonly Kind[]) {
  describe(`fidelity over ${kind}, a client with roots, elicitation and sampling (${runtime})`, () => {
    let h: Harness;
    let http: { url: string; child: ChildProcess } | undefined;

    before(async () => {
      http = kind === 'stdio' ? undefined : await startEverything(kind);
      const ev = http
        ? { url: http.url, ...(kind === 'sse' ? { type: 'sse' } : {}), confirm: 'none' }
        : { command: process.execPath, args: [EVERYTHING, 'stdio'], confirm: 'none' };
      h = await start({ ev, relay: { command: process.execPath, args: [RELAY_FIXTURE], confirm: 'none' } }, FULL, {
        proxy: { relayTimeoutSeconds: 3, maxRelayBytes: 4096, maxRelaysPerRun: 8 },
      });
    });
    after(async () => {
      await h?.close();
      http?.child.kill();
    });

    test('every feature: what Python gets and what the client gets', async () => {
      const progress: string[] = [];
      const { result } = await h.run(MATRIX_CODE, { timeout: 60 }, (p) => void progress.push(p.message ?? ''));
      const out = matrixOf(result);
      if (process.env.FIDELITY_DEBUG) console.log(JSON.stringify(out, null, 1), progress);
      // roots: the client's, asked at connect and again by the tool
      assert.match(text(out.roots), /file:\/\/\/tmp\/fidelity-a/);
      assert.ok(h.rootsAsked >= 1);
      // form elicitation: asked of the client, naming the server; its answer reaches the tool
      const form = h.elicitations.find((e) => e.mode !== 'url' && e.message.includes('Please provide inputs'));
      assert.ok(form, JSON.stringify(h.elicitations));
      assert.match(form.message, /^MCP server "ev" asks: /);
      assert.match(text(out.elicit), /Ada/);
      // sampling: the client's answer comes back to the tool
      assert.equal(h.samplings.length >= 1, true);
      assert.match(text(out.sample), /fidelity-model/);
      // -32042: the URL elicitation of the error asked, the call retried once, then its own URL elicitation
      const urls = h.elicitations.flatMap((e) => (e.mode === 'url' ? [e.url] : []));
      assert.ok(urls.includes('https://modelcontextprotocol.io'), JSON.stringify(urls));
      assert.ok(urls.includes('https://example.com/next'), JSON.stringify(urls));
      assert.ok(!(out.url as { error?: string }).error, text(out.url));
      // progress of a proxied call, as the run's progress
      assert.ok(
        progress.some((m) => m.startsWith('ev.trigger-long-running-operation')),
        JSON.stringify(progress),
      );
      assert.match(text(out.progress), /Long running operation completed/);
      // a task: its statuses as progress, its elicitation (input_required) relayed, its result
      assert.ok(
        progress.some((m) => m.startsWith('ev.simulate-research-query: task working')),
        JSON.stringify(progress),
      );
      assert.ok(h.elicitations.some((e) => e.mode !== 'url' && 'interpretation' in e.requestedSchema.properties));
      assert.match(text(out.task), /Research Report: bees/);
      assert.doesNotMatch(text(out.task), /elicitation unavailable/);
      // resources, prompts, annotations, errors
      assert.ok((out.resources as number) > 0);
      assert.ok(out.read);
      assert.ok((out.prompts as string[]).length > 0);
      assert.match(text(out.annotated), /Error: Operation failed/);
      assert.ok((out.bad as { error?: string }).error, text(out.bad));
      // logging: the server's log messages reach the client as the bridge's, named by server
      assert.ok(
        h.logs.some((l) => l.logger?.startsWith('ev')),
        JSON.stringify(h.logs.slice(0, 5)),
      );
      // the run log records what was relayed
      const events = await h.relayEvents();
      for (const method of ['roots/list', 'elicitation/create', 'sampling/createMessage', 'elicitation/create (url, for a tool call)']) {
        assert.ok(
          events.some((e) => e.method === method && e.server === 'ev' && e.outcome === 'answered'),
          `${method}: ${JSON.stringify(events)}`,
        );
      }
    });

    test('roots changed on the client reach the server', async () => {
      h.roots = [{ uri: 'file:///tmp/fidelity-b', name: 'fidelity-b' }];
      await h.client.sendRootsListChanged();
      let seen = '';
      for (let i = 0; i < 20 && !seen.includes('fidelity-b'); i++) {
        await sleep(300);
        const { result } = await h.run('print(await call_tool("ev", "get-roots-list", {}))');
        seen = textOf(result);
      }
      assert.match(seen, /fidelity-b/);
      h.roots = [{ uri: 'file:///tmp/fidelity-a', name: 'fidelity-a' }];
    });

    if (kind !== 'stdio') return;

    test('caps: an oversized sampling request and a form with too many fields are refused, not asked', async () => {
      const before = { e: h.elicitations.length, s: h.samplings.length };
      const { result } = await h.run(
        'import json\nprint("JSON" + json.dumps([await call_tool("relay", "ask-sampling", {"chars": 8000}), await call_tool("relay", "ask-form", {"fields": 40}), await call_tool("relay", "ask-sampling", {"chars": 10})]))',
      );
      const [big, wide, small] = (
        JSON.parse(
          textOf(result)
            .split('\n')
            .find((l) => l.startsWith('JSON'))!
            .slice(4),
        ) as string[]
      ).map((s) => JSON.parse(s) as { code?: number; message?: string; ok?: unknown });
      assert.equal(big?.code, -32602, JSON.stringify(big));
      assert.match(big?.message ?? '', /proxy\.maxRelayBytes/);
      assert.equal(wide?.code, -32602, JSON.stringify(wide));
      assert.match(wide?.message ?? '', /40 fields/);
      assert.ok(small?.ok, JSON.stringify(small));
      assert.equal(h.elicitations.length, before.e);
      assert.equal(h.samplings.length, before.s + 1);
      // includeContext names the bridge's conversation, not the server's: never passed on
      assert.equal(h.samplings.at(-1)?.includeContext, undefined);
      // Refusals within a second are grouped: the second is in a record written when the second ends.
      const refusedOfRelay = async () => (await h.relayEvents()).filter((e) => e.outcome === 'refused' && e.server === 'relay');
      await until('the grouped refusal record', async () => (await refusedOfRelay()).length >= 2);
      const refused = await refusedOfRelay();
      assert.equal(
        refused.reduce((n, e) => n + ((e.count as number | undefined) ?? 1), 0),
        2,
        JSON.stringify(refused),
      );
    });

    test('caps hold under concurrency: ten oversized requests at once are all refused', async () => {
      const { result } = await h.run(
        'import asyncio, json\nr = await asyncio.gather(*[call_tool("relay", "ask-sampling", {"chars": 8000}) for _ in range(10)])\nprint("JSON" + json.dumps([json.loads(x).get("code") for x in r]))',
      );
      const codes = JSON.parse(
        textOf(result)
          .split('\n')
          .find((l) => l.startsWith('JSON'))!
          .slice(4),
      ) as number[];
      assert.deepEqual(codes, Array(10).fill(-32602));
    });

    test('the relay timeout bounds a question nobody answers; the wait is off the run clock', async () => {
      // No answer within relayTimeoutSeconds (3 s): the server gets a timeout error, the run log says so.
      h.answer = () => new Promise(() => {});
      const slow = await h.run('print(await call_tool("relay", "ask-form", {}))', { timeout: 30 });
      assert.match(textOf(slow.result), /-32001/);
      assert.ok((await h.relayEvents()).some((e) => e.outcome === 'timeout' && e.method === 'elicitation/create'));
      // An answer after 2 s, in a run allowed 1 s: the run goes on (its clock was paused).
      h.answer = async (params) => {
        await sleep(2000);
        return fill(params);
      };
      const paused = await h.run('print(await call_tool("relay", "ask-form", {}))', { timeout: 1 });
      assert.equal(paused.data.status, 'ok', textOf(paused.result));
      assert.match(textOf(paused.result), /"action":"accept"/);
      h.answer = fill;
    });

    test('floods: two questions of a server pending at once, the rest refused at once and grouped in the log; so many per run', async () => {
      h.answer = async (params) => {
        await sleep(1000);
        return fill(params);
      };
      const beforeAsked = h.elicitations.length;
      const beforeRefused = (await h.relayEvents()).filter((e) => e.outcome === 'refused').length;
      const gathered = await h.run(
        'import asyncio, json\nr = await asyncio.gather(*[call_tool("relay", "ask-form", {}) for _ in range(6)])\nprint("JSON" + json.dumps([json.loads(x) for x in r]))',
        { timeout: 30 },
      );
      h.answer = fill;
      const answers = JSON.parse(
        textOf(gathered.result)
          .split('\n')
          .find((l) => l.startsWith('JSON'))!
          .slice(4),
      ) as { ok?: unknown; code?: number; message?: string }[];
      assert.equal(answers.filter((a) => a.ok).length, 2, JSON.stringify(answers));
      const refused = answers.filter((a) => !a.ok);
      assert.equal(refused.length, 4);
      for (const a of refused) {
        assert.equal(a.code, -32600);
        assert.match(a.message ?? '', /proxy\.maxPendingRelaysPerServer/);
      }
      assert.equal(h.elicitations.length, beforeAsked + 2);
      // Four refusals within a second: one record written at once, one with the count of the rest.
      const refusedSince = async () => (await h.relayEvents()).filter((e) => e.outcome === 'refused').slice(beforeRefused);
      await until('the grouped refusal record', async () => (await refusedSince()).length >= 2);
      const records = await refusedSince();
      assert.equal(records.length, 2, JSON.stringify(records));
      assert.equal(records[1]?.count, 3);
      // maxRelaysPerRun (8 here): a loop of ten sampling requests in one run gets eight answered.
      const looped = await h.run(
        'import json\nout = []\nfor _ in range(10):\n    out.append(json.loads(await call_tool("relay", "ask-sampling", {})))\nprint("JSON" + json.dumps(out))',
      );
      const samples = JSON.parse(
        textOf(looped.result)
          .split('\n')
          .find((l) => l.startsWith('JSON'))!
          .slice(4),
      ) as { ok?: unknown; message?: string }[];
      assert.equal(samples.filter((a) => a.ok).length, 8, JSON.stringify(samples));
      assert.match(samples.at(-1)?.message ?? '', /proxy\.maxRelaysPerRun/);
    });

    test("spoofing: a relayed question names its server first and in every field; the confirmation's fields (folded) and wording are refused", async () => {
      const before = h.elicitations.length;
      const { result } = await h.run(
        [
          'import json',
          'own = "\\n\\nThe sandbox wants fs.delete\\nPress accept."',
          'a = json.loads(await call_tool("relay", "ask-form", {"message": own, "title": "Allow deleting\\n"}))',
          'fake = "\\n\\nCode Execution Mode: code running in the sandbox wants to call the tool fs.delete\\nAccept to allow this call."',
          'refused = [json.loads(await call_tool("relay", "ask-form", args)) for args in ({"message": fake}, {"title": "Allow this tool for the rest of this session"}, {"key": "forSession"}, {"key": "forsession"}, {"key": "forSession\\u200b"})]',
          'print("JSON" + json.dumps([a, *refused]))',
        ].join('\n'),
      );
      const [spoof, ...refused] = JSON.parse(
        textOf(result)
          .split('\n')
          .find((l) => l.startsWith('JSON'))!
          .slice(4),
      ) as { ok?: unknown; code?: number; message?: string }[];
      assert.ok(spoof?.ok, JSON.stringify(spoof));
      const asked = h.elicitations.slice(before);
      assert.equal(asked.length, 1, 'only the question of its own words is asked');
      const question = asked[0]!;
      assert.ok(question.mode !== 'url');
      assert.equal(question.message.split('\n')[0], 'MCP server "relay" asks: The sandbox wants fs.delete');
      assert.equal((question.requestedSchema.properties.f as { title?: string }).title, '[relay] Allow deleting 0');
      assert.equal(refused.length, 5);
      for (const r of refused) assert.equal(r.code, -32600, JSON.stringify(r));
      assert.match(refused[0]?.message ?? '', /wording of the bridge's own confirmation \("Code Execution Mode"\)/);
      assert.match(refused[1]?.message ?? '', /wording of the bridge's own confirmation \("this tool for the rest of this session"\)/);
      for (const r of refused.slice(2)) assert.match(r.message ?? '', /only the bridge's own confirmation uses \("forSession"/);
    });

    test('URL elicitations: https, or http to loopback, and no user name in the URL', async () => {
      const before = h.elicitations.length;
      const { result } = await h.run(
        'import json\nprint("JSON" + json.dumps([json.loads(await call_tool("relay", "ask-url", {"url": u, "id": u})) for u in ["http://evil.example/x", "https://github.com@evil.example/", "http://127.0.0.1:9/cb", "https://example.com/ok"]]))',
      );
      const out = JSON.parse(
        textOf(result)
          .split('\n')
          .find((l) => l.startsWith('JSON'))!
          .slice(4),
      ) as { ok?: unknown; code?: number }[];
      assert.deepEqual(
        out.map((o) => (o.ok ? 'ok' : o.code)),
        [-32600, -32600, 'ok', 'ok'],
      );
      assert.deepEqual(
        h.elicitations.slice(before).map((e) => (e.mode === 'url' ? e.url : e.mode)),
        ['http://127.0.0.1:9/cb', 'https://example.com/ok'],
      );
    });

    test('-32042 from a fixture: the URL asked, the call retried once', async () => {
      const before = h.elicitations.length;
      const { result } = await h.run('print(await call_tool("relay", "needs-url", {}))');
      assert.match(textOf(result), /signed in: done/);
      const asked = h.elicitations.slice(before);
      assert.deepEqual(
        asked.map((e) => (e.mode === 'url' ? e.url : e.mode)),
        ['https://example.com/authorize'],
      );
      // The server's completion notice is passed on for the elicitation it asked, not for others.
      for (let i = 0; i < 20 && h.completed.length === 0; i++) await sleep(50);
      assert.deepEqual(h.completed, ['e-1']);
      // Declined: no retry; the ToolError keeps -32042 and its data, and says the user did not accept.
      h.answer = (params) => (params.mode === 'url' ? { action: 'decline' } : fill(params));
      const declined = await h.run(
        'try:\n    await call_tool("relay", "needs-url", {})\nexcept ToolError as e:\n    print("CODE", e.code, e.data["elicitations"][0]["url"], str(e))',
      );
      h.answer = fill;
      assert.match(textOf(declined.result), /CODE -32042 https:\/\/example\.com\/authorize .*did not accept/);
    });

    test('a task the run stops is cancelled on the server (tasks/cancel)', async () => {
      const { data } = await h.run('await call_tool("ev", "simulate-research-query", {"topic": "slow"})', { timeout: 1.5 });
      assert.equal(data.status, 'timeout');
      for (let i = 0; i < 30 && !/task \S+ of simulate-research-query cancelled/.test(h.stderr()); i++) await sleep(200);
      assert.match(h.stderr(), /task \S+ of simulate-research-query cancelled \(tasks\/cancel\); its status now: cancelled/);
    });
  });
}

describe(`fidelity with a client that declares nothing (${runtime})`, () => {
  let h: Harness;

  before(async () => {
    h = await start(
      {
        ev: { command: process.execPath, args: [EVERYTHING, 'stdio'], confirm: 'none' },
        relay: { command: process.execPath, args: [RELAY_FIXTURE], confirm: 'none' },
      },
      {},
      { roots: ['/tmp/fidelity-config-root'] },
    );
  });
  after(async () => {
    await h?.close();
  });

  test('roots from the configuration; elicitation and sampling refused on purpose; -32042 kept', async () => {
    const { result } = await h.run(
      [
        'import json',
        'out = {"roots": await call_tool("ev", "get-roots-list", {})}',
        'out["form"] = json.loads(await call_tool("relay", "ask-form", {}))',
        'out["sampling"] = json.loads(await call_tool("relay", "ask-sampling", {}))',
        'out["asked_roots"] = json.loads(await call_tool("relay", "ask-roots", {}))',
        'try:',
        '    await call_tool("relay", "needs-url", {})',
        'except ToolError as e:',
        '    out["url"] = {"code": e.code, "data": e.data}',
        'try:',
        '    await call_tool("ev", "trigger-elicitation-request", {})',
        'except ToolError as e:',
        '    out["elicit_tool"] = str(e)',
        'out["task"] = await call_tool("ev", "simulate-research-query", {"topic": "ants"})',
        'print("JSON" + json.dumps(out, default=str))',
      ].join('\n'),
      { timeout: 60 },
    );
    const out = matrixOf(result) as Record<
      string,
      { code?: number; message?: string; ok?: { roots?: Root[] }; data?: { elicitations?: { url: string }[] } }
    >;
    assert.match(text(out.roots), /file:\/\/\/tmp\/fidelity-config-root/);
    assert.deepEqual(out.asked_roots?.ok?.roots, [{ uri: 'file:///tmp/fidelity-config-root', name: 'fidelity-config-root' }]);
    assert.equal(out.form?.code, -32600, JSON.stringify(out.form));
    assert.match(out.form?.message ?? '', /does not support elicitation/);
    assert.equal(out.sampling?.code, -32600, JSON.stringify(out.sampling));
    assert.equal(out.url?.code, -32042);
    assert.equal(out.url?.data?.elicitations?.[0]?.url, 'https://example.com/authorize');
    // server-everything offers its elicitation tool only to clients that declare elicitation
    assert.match(text(out.elicit_tool), /has no tool "trigger-elicitation-request"/);
    assert.match(text(out.task), /Research Report: ants/);
    const refusedNow = async () => (await h.relayEvents()).filter((e) => e.outcome === 'refused');
    await until('both refusals recorded', async () => (await refusedNow()).length >= 2);
    const refused = await refusedNow();
    assert.deepEqual(refused.map((e) => e.method).sort(), ['elicitation/create', 'sampling/createMessage']);
  });
});

// The sandbox's search and docs helpers (mcp_runtime.py) in a plain python3, the host faked:
// a hit's signature is rendered as help() shows it, from the params the host sends (which the
// code never sees), and a search that finds nothing says so on stderr, naming the servers.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

const RUNTIME = readFileSync(new URL('../../src/bridge/sandbox-api/mcp_runtime.py', import.meta.url), 'utf8');

/** Runs `driver` with the runtime loaded as `rt` and a fake host answering from `replies`; returns its `out` and stderr. */
function run(replies: Record<string, unknown>, driver: string[]): { out: unknown; stderr: string } {
  const script = [
    'import asyncio, contextlib, inspect, io, json, sys, types',
    'host = types.ModuleType("sandbox_host")',
    'class HostError(Exception): pass',
    'host.HostError = HostError',
    `replies = json.loads(${JSON.stringify(JSON.stringify(replies))})`,
    'async def request(method, params): return replies[method]',
    'host.request = request',
    'host.request_sync = lambda method, params: []',
    'sys.modules["sandbox_host"] = host',
    'rt = types.ModuleType("mcp_runtime")',
    'exec(compile(sys.stdin.read(), "<mcp.runtime>", "exec"), rt.__dict__)',
    'rt._SERVERS[:] = [{"name": "memory", "alias": "mcp_memory"}]',
    'err = io.StringIO()',
    'with contextlib.redirect_stderr(err):',
    ...driver.map((line) => `    ${line}`),
    'print(json.dumps({"out": out, "stderr": err.getvalue()}))',
  ].join('\n');
  return JSON.parse(execFileSync('python3', ['-c', script], { input: RUNTIME, encoding: 'utf8' })) as { out: unknown; stderr: string };
}

const PARAMS = [
  { name: 'entities', type: 'list[{name: str}]', required: true, identifier: true },
  { name: 'mode', type: 'Literal["a", "b"]', required: false, default: 'a', identifier: true },
];
const HIT = {
  server: 'memory',
  tool: 'create_entities',
  alias: 'create_entities',
  description: 'Create entities',
  signature: 'create_entities(...)',
  params: PARAMS,
  returnType: 'str | dict | list[str | dict]',
  score: 0.71,
};

test("a hit's signature is help()'s, its score kept, the host's params dropped", () => {
  const { out } = run({ search_tools: { hits: [HIT], notReady: [] } }, [
    'hits = asyncio.run(rt.search_tool_docs("make entities"))',
    'f = rt._tool_function("memory", dict(tool="create_entities", alias="create_entities", params=' +
      `json.loads(${JSON.stringify(JSON.stringify(PARAMS))}), returnType="str | dict | list[str | dict]"))`,
    'out = {"hits": hits, "help": "mcp_memory." + f.__name__ + str(inspect.signature(f))}',
  ]);
  const { hits, help } = out as { hits: Array<Record<string, unknown>>; help: string };
  assert.equal(
    help,
    `mcp_memory.create_entities(*, entities: list[{name: str}], mode: Literal["a", "b"] = 'a') -> str | dict | list[str | dict]`,
  );
  assert.deepEqual(hits, [
    { server: 'memory', tool: 'create_entities', alias: 'create_entities', description: 'Create entities', signature: help, score: 0.71 },
  ]);
});

test('a search that finds nothing returns [] and says on stderr that no configured server does it, naming them', () => {
  const servers = [
    { name: 'memory', description: 'Knowledge graph\nmemory', tools: 9 },
    { name: 'filesystem', tools: 14 },
  ];
  const { out, stderr } = run({ search_tools: { hits: [], notReady: [], servers } }, [
    'out = asyncio.run(rt.search_tool_docs("send an email"))',
  ]);
  assert.deepEqual(out, []);
  assert.match(stderr, /nothing fits 'send an email': no tool of the configured servers does this/);
  assert.match(stderr, /memory \(9 tools: Knowledge graph memory\); filesystem \(14 tools\)/);
  assert.match(stderr, /tell the user it is not available/);
});

test('a search naming a service no configured server provides says so by name, with hits or without', () => {
  const servers = [{ name: 'slack', tools: 8 }];
  const empty = run({ search_tools: { hits: [], notReady: [], servers, unserved: ['Google Drive'] } }, [
    'out = asyncio.run(rt.search_tool_docs("copy the backups to Google Drive"))',
  ]);
  assert.deepEqual(empty.out, []);
  assert.match(
    empty.stderr,
    /^search_tool_docs: nothing fits 'copy the backups to Google Drive': no configured server provides Google Drive\. The servers: slack \(8 tools\)\./,
  );
  const some = run({ search_tools: { hits: [HIT], notReady: [], unserved: ['Microsoft Teams'] } }, [
    'out = asyncio.run(rt.search_tool_docs("send a Teams message to QA"))',
  ]);
  assert.equal((some.out as unknown[]).length, 1);
  assert.equal(
    some.stderr,
    'search_tool_docs: no configured server provides Microsoft Teams: the hits can do only other parts of the request.\n',
  );
});

test('a search whose hits are all weak says they may not do it, naming the servers; a strong one says nothing', () => {
  const servers = [{ name: 'memory', description: 'Knowledge graph memory', tools: 9 }];
  const weak = run({ search_tools: { hits: [{ ...HIT, score: 0.24 }], notReady: [], weak: true, servers } }, [
    'out = asyncio.run(rt.search_tool_docs("start a 25 minute timer"))',
  ]);
  assert.equal((weak.out as unknown[]).length, 1);
  assert.equal(
    weak.stderr,
    "search_tool_docs: only weak matches for 'start a 25 minute timer' (best score 0.24): check that a hit does this before calling it. " +
      'If none does, no configured server does; the servers: memory (9 tools: Knowledge graph memory).\n',
  );
  const strong = run({ search_tools: { hits: [HIT], notReady: [] } }, ['out = asyncio.run(rt.search_tool_docs("make entities"))']);
  assert.equal(strong.stderr, '');
});

test('query_tool_docs renders the same signature and keeps what a call returns', () => {
  const { out } = run(
    {
      query_tools: [
        {
          server: 'memory',
          tool: 'create_entities',
          alias: 'create_entities',
          signature: 'x',
          returns: '{ok: bool}',
          params: PARAMS,
          returnType: '{ok: bool}',
        },
      ],
    },
    ['out = asyncio.run(rt.query_tool_docs("memory", "create_entities"))'],
  );
  assert.deepEqual(out, [
    {
      server: 'memory',
      tool: 'create_entities',
      alias: 'create_entities',
      signature: `mcp_memory.create_entities(*, entities: list[{name: str}], mode: Literal["a", "b"] = 'a') -> {ok: bool}`,
      returns: '{ok: bool}',
    },
  ]);
});

test('a call whose result changes what the tool returns retypes its help(): signature and Returns line', () => {
  const { out } = run({ call_tool: { isError: false, value: 'hi', returnType: 'str', returns: "str: the tool's text" } }, [
    'f = rt._tool_function("memory", dict(tool="echo", alias="echo", params=[], returnType="str | dict | list[str | dict]", returns="content"))',
    'proxy = rt._ServerProxy({"name": "memory", "alias": "mcp_memory"})',
    'proxy.__dict__["_tools"] = {"echo": f}',
    'rt._proxies["memory"] = proxy',
    'value = asyncio.run(rt.call_tool("memory", "echo", {}))',
    'out = [value, str(inspect.signature(f)), [l for l in f.__doc__.split("\\n") if l.startswith("Returns:")]]',
  ]);
  assert.deepEqual(out, ['hi', '() -> str', ["Returns: str: the tool's text"]]);
});

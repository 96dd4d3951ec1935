// What every prompt pays for: run_python's listing (name, description, input schema as an MCP
// client receives them) and the bridge's server instructions.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { encode } from 'gpt-tokenizer';
import { ToolCatalog } from '../../src/bridge/catalog/catalog.ts';
import { RUN_PYTHON, RUN_PYTHON_DESCRIPTION, listedInput, runPythonDescription } from '../../src/bridge/tool/run-python.ts';
import { MAX_INSTRUCTIONS_CHARS, MAX_PACKAGES_LINE_CHARS, packagesLine, serverInstructions } from '../../src/bridge/server-instructions.ts';
import { parseConfig } from '../../src/config/load.ts';
import { networkLine, networkReport } from '../../src/config/network-summary.ts';

const MAX_LISTING_TOKENS = 200;

async function listing(
  maxTimeoutSeconds: number,
  workspace?: { path: string | string[]; access: 'read-only' },
  ociRuntime?: string,
  backend?: 'wasm',
) {
  const { sandbox } = parseConfig({
    servers: {},
    sandbox: {
      maxTimeoutSeconds,
      ...(workspace ? { workspace } : {}),
      ...(ociRuntime ? { ociRuntime } : {}),
      ...(backend ? { backend } : {}),
    },
  });
  const server = new McpServer({ name: 'listing', version: '1' });
  server.registerTool(RUN_PYTHON, { description: runPythonDescription(sandbox), inputSchema: listedInput(sandbox) }, async () => ({
    content: [],
  }));
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'listing-test', version: '1' });
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  try {
    const [tool] = (await client.listTools()).tools;
    return tool!;
  } finally {
    await client.close();
  }
}

test(`run_python's listing is at most ${MAX_LISTING_TOKENS} tokens (o200k) and says the essentials`, async () => {
  for (const [max, workspace] of [
    [60, undefined],
    [3600, { path: '/srv/data', access: 'read-only' as const }],
  ] as const) {
    const tool = await listing(max, workspace);
    assert.equal(tool.description?.includes('/workspace'), workspace !== undefined, 'the listing names /workspace only when it is mounted');
    const tokens = encode(JSON.stringify({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema })).length;
    assert.ok(tokens <= MAX_LISTING_TOKENS, `the listing is ${tokens} tokens`);
  }
  for (const essential of [
    'standard library only',
    'no pip',
    'no network',
    'ToolError',
    'search_tool_docs',
    'query_tool_docs(server, tool, detail="full")',
    'emit_image',
    'capped',
  ]) {
    assert.ok(RUN_PYTHON_DESCRIPTION.includes(essential), `the description says ${essential}`);
  }
  const properties = ((await listing(300)).inputSchema.properties ?? {}) as Record<string, { description?: string }>;
  assert.deepEqual(Object.keys(properties).sort(), ['code', 'reset', 'servers', 'session', 'timeout']);
  for (const [name, property] of Object.entries(properties)) assert.ok(property.description, `${name} has a description`);
});

test('under gVisor the listing says so, within the token limit, with packages and workspace folders too', async () => {
  const plain = await listing(3600, { path: ['/srv/app', '/home/me/lib'], access: 'read-only' });
  assert.doesNotMatch(plain.description ?? '', /gVisor/);
  const tool = await listing(3600, { path: ['/srv/app', '/home/me/lib'], access: 'read-only' }, '/usr/bin/runsc');
  assert.match(tool.description ?? '', /^Python 3 gVisor sandbox, standard library only/);
  const tokens = encode(JSON.stringify({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema })).length;
  assert.ok(tokens <= MAX_LISTING_TOKENS, `the listing is ${tokens} tokens`);
  const { sandbox } = parseConfig({
    servers: {},
    sandbox: { maxTimeoutSeconds: 3600, ociRuntime: 'runsc', workspace: { path: '/srv/data', access: 'read-only' } },
  });
  // gVisor and the workspace note leave no room for names: the capabilities resource has them.
  assert.match(runPythonDescription(sandbox, { names: ['numpy'], more: 0 }), /^Python 3 gVisor sandbox, with packages \(no pip/);
});

test('in WebAssembly the listing says so, and that there are no subprocesses, within the token limit', async () => {
  const tool = await listing(3600, { path: ['/srv/app', '/home/me/lib'], access: 'read-only' }, undefined, 'wasm');
  assert.match(tool.description ?? '', /^Python 3 WebAssembly sandbox, standard library only \(no pip, no network, no subprocesses\)/);
  // No workspace is mounted there, so the listing does not promise one.
  assert.doesNotMatch(tool.description ?? '', /workspace/i);
  const tokens = encode(JSON.stringify({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema })).length;
  assert.ok(tokens <= MAX_LISTING_TOKENS, `the listing is ${tokens} tokens`);
});

test('the listing says where several workspace folders are, within the token limit however many', async () => {
  const two = await listing(3600, { path: ['/srv/app', '/home/me/lib'], access: 'read-only' });
  assert.match(two.description ?? '', /Read-only folders in \/workspace\.$/);
  const many = Array.from({ length: 16 }, (_, i) => `/srv/a-rather-long-folder-name-number-${i}`);
  for (const tool of [two, await listing(3600, { path: many, access: 'read-only' })]) {
    const tokens = encode(JSON.stringify({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema })).length;
    assert.ok(tokens <= MAX_LISTING_TOKENS, `the listing is ${tokens} tokens`);
  }
});

test('with packages in the image, the listing names the notable ones first and counts the rest, as room allows within the limit; the instructions name them, capped', async () => {
  const plain = parseConfig({ servers: {}, sandbox: { maxTimeoutSeconds: 3600 } }).sandbox;
  assert.equal(runPythonDescription(plain), runPythonDescription(plain, { names: [], more: 0 }));
  assert.match(
    runPythonDescription(plain, { names: ['pandas', 'numpy'], more: 0 }),
    /^Python 3 sandbox, with packages numpy, pandas \(no pip, no network\)/,
  );
  // The data image's 29 distributions: scipy is named, not cut behind Brotli and two dozen others.
  const data = ['Brotli', 'Pillow', 'appdirs', 'attrs', 'beniget', 'contourpy', 'cycler', 'decorator', 'fonttools', 'fs', 'gast'];
  data.push('kiwisolver', 'lxml', 'lz4', 'matplotlib', 'mpmath', 'numpy', 'packaging', 'ply', 'pyparsing', 'python_dateutil');
  data.push('pythran', 'pytz', 'scipy', 'six', 'sympy', 'typing_extensions', 'ufoLib2', 'unicodedata2');
  assert.match(
    runPythonDescription(plain, { names: data, more: 0 }),
    /^Python 3 sandbox, with packages numpy, matplotlib, scipy and 26 more \(no pip, no network\)/,
  );
  // Whatever else the listing carries, and whatever the names, it stays within its budget (down to "with packages").
  const sandboxes = [
    plain,
    parseConfig({ servers: {}, sandbox: { maxTimeoutSeconds: 3600, ociRuntime: 'runsc' } }).sandbox,
    parseConfig({ servers: {}, sandbox: { maxTimeoutSeconds: 3600, workspace: { path: '/srv/data', access: 'read-only' } } }).sandbox,
    parseConfig({
      servers: {},
      sandbox: { maxTimeoutSeconds: 3600, ociRuntime: 'runsc', workspace: { path: ['/srv/app', '/home/me/lib'], access: 'read-only' } },
    }).sandbox,
  ];
  const namesSets = [
    { names: data, more: 3 },
    { names: ['scikit-learn', 'statsmodels', 'beautifulsoup4', 'python-dateutil'], more: 1000 },
    { names: ['typing_extensions', 'unicodedata2', 'ufoLib2', 'zope.interface'], more: 0 },
    { names: ['a1', 'b2', 'c3', 'd4', 'e5', 'f6'], more: 100_000 },
    { names: Array.from({ length: 64 }, (_, i) => `${'x'.repeat(90)}-${i}`), more: 0 },
  ];
  for (const sandbox of sandboxes) {
    for (const packages of namesSets) {
      const described = runPythonDescription(sandbox, packages);
      assert.match(described, /^Python 3 (gVisor )?sandbox, with packages( [^(]+)? \(no pip, no network\)/);
      const server = new McpServer({ name: 'listing', version: '1' });
      server.registerTool(RUN_PYTHON, { description: described, inputSchema: listedInput(sandbox) }, async () => ({ content: [] }));
      const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
      const client = new Client({ name: 'listing-test', version: '1' });
      await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
      try {
        const [tool] = (await client.listTools()).tools;
        const tokens = encode(JSON.stringify({ name: tool!.name, description: tool!.description, inputSchema: tool!.inputSchema })).length;
        assert.ok(tokens <= MAX_LISTING_TOKENS, `the listing is ${tokens} tokens: ${described}`);
      } finally {
        await client.close();
      }
    }
  }
  assert.match(
    serverInstructions([], () => true, ['numpy', 'pandas']),
    /\nPython packages installed besides the standard library: numpy, pandas \(no pip\)\. No MCP servers/,
  );
  const many = Array.from({ length: 64 }, (_, i) => `some-rather-long-package-name-${i}`);
  const line = packagesLine(many);
  assert.ok(line.length <= MAX_PACKAGES_LINE_CHARS, `${line.length} characters`);
  assert.match(line, /some-rather-long-package-name-0, .* and \d+ more \(no pip\)\.$/);
  const text = serverInstructions(
    catalogOf(500, (i) => `Server number ${i} does a great many useful things for the agent`).records(),
    () => true,
    many,
  );
  assert.ok(text.length <= MAX_INSTRUCTIONS_CHARS, `${text.length} characters`);
});

function catalogOf(count: number, description: (i: number) => string | undefined): ToolCatalog {
  return new ToolCatalog(
    Array.from({ length: count }, (_, i) => ({
      name: `server-${i}`,
      fingerprint: 'f',
      ...(description(i) ? { description: description(i)! } : {}),
    })),
  );
}

test('server instructions name the servers with one line each, within the cap', () => {
  const catalog = catalogOf(3, (i) =>
    i === 0 ? 'Knowledge graph memory.\nSecond line that is left out.' : i === 1 ? 'x'.repeat(400) : undefined,
  );
  catalog.setTools('server-2', [{ name: 'read-file' }, { name: 'write' }, { name: 'a' }, { name: 'b' }, { name: 'c' }]);
  const text = serverInstructions(catalog.records(), () => true);
  assert.match(text, /query_tool_docs\(server, tool, detail="full"\)/);
  // What the code can reach besides tools is named too, so it is not found by reading globals().
  for (const name of ['list_resources(server)', 'read_resource(server, uri)', 'get_prompt(server, name, args)', 'capability_summary()'])
    assert.ok(text.includes(name), `${name} is not named`);
  assert.match(text, /^- mcp_server_0: Knowledge graph memory\.$/m);
  assert.doesNotMatch(text, /Second line/);
  assert.match(text, /^- mcp_server_1: x{117}\.\.\.$/m);
  assert.match(text, /^- mcp_server_2: 5 tools \(read_file, write, a, b, \.\.\.\)$/m);
  assert.match(
    serverInstructions(catalog.records(), (s) => s !== 'server-0'),
    /^- mcp_server_0: needs the user's consent$/m,
  );
  assert.match(
    serverInstructions([], () => true),
    /No MCP servers are configured/,
  );
});

test('server instructions stay under the cap whatever the number of servers', () => {
  const many = serverInstructions(
    catalogOf(500, (i) => `Server number ${i} does a great many useful things for the agent`).records(),
    () => true,
  );
  assert.ok(many.length <= MAX_INSTRUCTIONS_CHARS, `${many.length} characters`);
  assert.match(many, /\n\.\.\. \d+ more: discovered_servers\(\)$/);
  assert.match(many, /^- mcp_server_0: /m);
});

test('sandbox.network on: the listing says so in a few words, within its budget; the instructions name the hosts', async () => {
  const data = ['numpy', 'pandas', 'scipy', 'matplotlib', 'scikit-learn', 'statsmodels'];
  const withNetwork = (network: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    parseConfig({ servers: {}, sandbox: { maxTimeoutSeconds: 3600, network, ...extra } }).sandbox;
  const listed = withNetwork({ allow: ['api.example.com:443', '*.pypi.org'] });
  assert.match(runPythonDescription(listed), /\(no pip, network: listed hosts only\)/);
  assert.match(runPythonDescription(withNetwork({ ask: true })), /\(no pip, network: asks per host\)/);
  assert.match(runPythonDescription(withNetwork({ allow: [] })), /\(no pip, no network\)/, 'an empty list without ask is no network');
  for (const sandbox of [
    listed,
    withNetwork({ ask: true }, { ociRuntime: 'runsc', workspace: { path: ['/srv/app', '/home/me/lib'], access: 'read-only' } }),
  ]) {
    const described = runPythonDescription(sandbox, { names: data, more: 1000 });
    const server = new McpServer({ name: 'listing', version: '1' });
    server.registerTool(RUN_PYTHON, { description: described, inputSchema: listedInput(sandbox) }, async () => ({ content: [] }));
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: 'listing-test', version: '1' });
    await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
    try {
      const [tool] = (await client.listTools()).tools;
      const tokens = encode(JSON.stringify({ name: tool!.name, description: tool!.description, inputSchema: tool!.inputSchema })).length;
      assert.ok(tokens <= MAX_LISTING_TOKENS, `the listing is ${tokens} tokens: ${described}`);
    } finally {
      await client.close();
    }
  }
  assert.equal(networkLine(parseConfig({ servers: {} }).sandbox.network), '');
  const line = networkLine(listed.network);
  assert.equal(
    line,
    "Network (HTTP and HTTPS through the bridge's proxy): only api.example.com:443, *.pypi.org; other hosts are refused (HTTP 403).",
  );
  assert.match(networkLine(withNetwork({ ask: true }).network), /no host without asking; any other host waits for the user to allow it/);
  const many = networkLine(withNetwork({ allow: Array.from({ length: 100 }, (_, i) => `host-${i}.example.com`) }).network);
  assert.ok(many.length < 320, many);
  assert.match(many, / and \d+ more;/);
  const instructions = serverInstructions([], () => true, [], line);
  assert.ok(instructions.includes(`\n${line}`), instructions);
  assert.doesNotMatch(
    serverInstructions([], () => true),
    /Network/,
  );
  assert.match(
    networkReport(listed.network),
    /^api\.example\.com:443, \*\.pypi\.org \(per run: 256 requests, 512 MiB; 16 connections at once\)$/,
  );
  assert.match(networkReport(undefined), /^none/);
});

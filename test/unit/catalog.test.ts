import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rmdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pythonName, uniqueAliases } from '../../src/bridge/catalog/aliases.ts';
import { MAX_TOOLS_PER_SERVER, ToolCatalog } from '../../src/bridge/catalog/catalog.ts';
import { splitWords } from '../../src/bridge/catalog/search.ts';
import {
  CONTENT_RETURNS,
  CONTENT_TYPE,
  paramsOf,
  returnsOf,
  returnsText,
  signatureOf,
  takesOtherKeys,
  TEXT_RETURNS,
} from '../../src/bridge/catalog/signature.ts';

test('aliases are Python identifiers, keywords are suffixed, collisions numbered', () => {
  assert.equal(pythonName('web-fixture'), 'web_fixture');
  assert.equal(pythonName('GitHub.Search'), 'github_search');
  assert.equal(pythonName('class'), 'class_');
  assert.equal(pythonName('2fa'), '_2fa');
  assert.equal(pythonName(''), '_');
  assert.deepEqual(uniqueAliases(['a-b', 'a_b', 'A.B', 'c']), ['a_b', 'a_b_2', 'a_b_3', 'c']);
});

test('signatures come from JSON schemas: required first, types mapped, odd names quoted', () => {
  const params = paramsOf({
    type: 'object',
    properties: {
      limit: { type: 'integer', description: 'max results' },
      query: { type: 'string' },
      'user-id': { type: ['string', 'null'] },
      mode: { enum: ['fast', 'slow'] },
      tags: { type: 'array', items: { type: 'string' } },
    },
    required: ['query'],
  });
  assert.equal(
    signatureOf('search', params, 'str'),
    'search(*, query: str, limit: int = None, "user-id": str | None = None, mode: Literal["fast", "slow"] = None, tags: list[str] = None) -> str',
  );
  assert.equal(params.find((p) => p.name === 'user-id')?.identifier, false);
  // Without a return type: what MCP returns in general, the tool's content.
  assert.equal(signatureOf('ping', paramsOf(undefined)), 'ping() -> str | dict | list[str | dict]');
  assert.deepEqual(paramsOf({ properties: 'nonsense' }), []);
});

test('signatures show nested shapes, enums, defaults and what a call returns', () => {
  const entities = {
    type: 'object',
    properties: {
      entities: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            name: { type: 'string' },
            entityType: { type: 'string' },
            observations: { type: 'array', items: { type: 'string' } },
          },
          required: ['name', 'entityType', 'observations'],
        },
      },
    },
    required: ['entities'],
  };
  assert.equal(
    signatureOf(
      'create_entities',
      paramsOf(entities),
      returnsOf({ type: 'object', properties: { content: { type: 'string' } }, required: ['content'] }),
    ),
    'create_entities(*, entities: list[{name: str, entityType: str, observations: list[str]}]) -> {content: str}',
  );
  const listing = paramsOf({
    type: 'object',
    properties: {
      path: { type: 'string' },
      sortBy: { type: 'string', enum: ['name', 'size'], default: 'name' },
      exclude: { type: 'array', items: { type: 'string' }, default: [] },
      recursive: { type: 'boolean', default: false },
      depth: { anyOf: [{ type: 'integer' }, { type: 'null' }] },
      options: { type: 'object', properties: { 'follow-links': { type: 'boolean' }, max: { type: 'number' } }, required: ['max'] },
      headers: { type: 'object', additionalProperties: { type: 'string' } },
      level: { const: 3 },
    },
    required: ['path'],
  });
  assert.equal(
    signatureOf('list', listing, 'str'),
    'list(*, path: str, sortBy: Literal["name", "size"] = "name", exclude: list[str] = [], recursive: bool = False, depth: int | None = None, ' +
      'options: {"follow-links"?: bool, max: float} = None, headers: dict[str, str] = None, level: Literal[3] = None) -> str',
  );
  assert.deepEqual(listing.find((p) => p.name === 'sortBy')?.default, 'name');
  assert.equal(listing.find((p) => p.name === 'path')?.default, undefined);
});

test('signatures follow local $refs and allOf, stop recursive schemas, and stay short', () => {
  const tree = {
    type: 'object',
    properties: { root: { $ref: '#/$defs/Node' } },
    required: ['root'],
    $defs: {
      Node: { type: 'object', properties: { label: { type: 'string' }, children: { type: 'array', items: { $ref: '#/$defs/Node' } } } },
    },
  };
  const [root] = paramsOf(tree);
  assert.match(root!.type, /^\{label\?: str, children\?: list\[\{label\?: str, children\?: list\[/);
  assert.ok(root!.type.length <= 240, root!.type);
  const merged = paramsOf({
    properties: {
      both: { allOf: [{ properties: { a: { type: 'string' } }, required: ['a'] }, { properties: { b: { type: 'integer' } } }] },
    },
  });
  assert.equal(merged[0]!.type, '{a: str, b?: int}');
  const wide = Object.fromEntries(
    Array.from({ length: 60 }, (_, i) => [`field${i}`, { type: 'object', properties: { value: { type: 'string' } } }]),
  );
  const [deep] = paramsOf({ properties: { deep: { type: 'object', properties: wide } } });
  assert.ok(deep!.type.length <= 240, `${deep!.type.length} characters`);
  const many = paramsOf({ properties: { pick: { enum: Array.from({ length: 30 }, (_, i) => `v${i}`) } } });
  assert.match(many[0]!.type, /^Literal\["v0", .*"v11", \.\.\.\]$/);
  assert.equal(returnsOf(undefined), undefined);
});

test('only a schema that lists its keys and does not allow others has its keywords checked', () => {
  assert.equal(takesOtherKeys({ type: 'object', properties: { a: { type: 'string' } } }), false);
  assert.equal(takesOtherKeys({ type: 'object', properties: {} }), false);
  assert.equal(takesOtherKeys({ type: 'object', properties: { a: {} }, additionalProperties: true }), true);
  assert.equal(takesOtherKeys({ type: 'object', properties: { a: {} }, additionalProperties: { type: 'string' } }), true);
  assert.equal(takesOtherKeys({ type: 'object' }), true);
  assert.equal(takesOtherKeys(undefined), true);
});

test('the catalog keeps title, annotations and outputSchema, and says what a call returns', () => {
  const catalog = new ToolCatalog([{ name: 'files', fingerprint: 'f' }]);
  const [read, write] = catalog.setTools('files', [
    {
      name: 'read',
      title: 'Read File',
      annotations: { readOnlyHint: true },
      inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
      outputSchema: { type: 'object', properties: { content: { type: 'string' } }, required: ['content'] },
    },
    { name: 'write', title: 'x'.repeat(5000) },
  ]);
  assert.equal(read!.title, 'Read File');
  assert.deepEqual(read!.annotations, { readOnlyHint: true });
  assert.equal(read!.returns, '{content: str}');
  assert.equal(read!.signature, 'read(*, path: str) -> {content: str}');
  assert.equal(write!.title, undefined, 'a bad title is dropped, not the tool');
  assert.equal(write!.signature, 'write() -> str | dict | list[str | dict]');
  assert.equal(returnsText(write!.returns, write!.seen), CONTENT_RETURNS);
});

test('without an outputSchema, a tool returns str while every call seen returned one text item, its content after', () => {
  const catalog = new ToolCatalog([{ name: 'files', fingerprint: 'f' }]);
  catalog.setTools('files', [
    { name: 'write' },
    { name: 'read', outputSchema: { type: 'object', properties: { n: { type: 'integer' } } } },
  ]);
  const entry = (name: string) => catalog.findTool('files', name)!;
  catalog.noteResult('files', 'write', true);
  assert.equal(entry('write').signature, 'write() -> str');
  assert.equal(returnsText(entry('write').returns, entry('write').seen), TEXT_RETURNS);
  // A relisting keeps what was seen; an image (or several items) makes it content for good.
  catalog.setTools('files', [
    { name: 'write' },
    { name: 'read', outputSchema: { type: 'object', properties: { n: { type: 'integer' } } } },
  ]);
  assert.equal(entry('write').returnType, 'str');
  catalog.noteResult('files', 'write', false);
  catalog.noteResult('files', 'write', true);
  assert.equal(entry('write').signature, `write() -> ${CONTENT_TYPE}`);
  // A tool with an outputSchema returns its structured content whatever was seen.
  catalog.noteResult('files', 'read', true);
  assert.equal(entry('read').signature, 'read() -> {n?: int}');
});

test('tool names split into words', () => {
  assert.equal(splitWords('createPullRequest'), 'create Pull Request');
  assert.equal(splitWords('list_issues-byRepo'), 'list issues by Repo');
  assert.equal(splitWords('getHTTPResponse'), 'get HTTP Response');
});

function catalogWith(dir?: string) {
  const catalog = new ToolCatalog(
    [
      { name: 'chat', description: 'Team chat', fingerprint: 'f1' },
      { name: 'git-hub', fingerprint: 'f2' },
    ],
    dir,
  );
  catalog.setTools('chat', [
    {
      name: 'post_message',
      description: 'Post a message to a channel',
      inputSchema: { type: 'object', properties: { channel: { type: 'string' }, text: { type: 'string' } } },
    },
    { name: 'list_channels', description: 'List the channels of the workspace' },
  ]);
  catalog.setTools('git-hub', [
    { name: 'create_pull_request', description: 'Create a new pull request in a repository' },
    { name: 'search_issues', description: 'Search issues and pull requests' },
    { name: 'bad', description: 42 },
  ]);
  return catalog;
}

test('search ranks the right tool first for plain-language queries', () => {
  const catalog = catalogWith();
  const top = (q: string) => catalog.search(q, 3).map((t) => `${t.server}/${t.tool}`);
  assert.equal(top('send a chat message')[0], 'chat/post_message');
  assert.equal(top('open a pull request')[0], 'git-hub/create_pull_request');
  assert.equal(top('channels')[0], 'chat/list_channels');
  assert.deepEqual(top(''), []);
});

test('untrusted tool lists are validated: bad entries are dropped', () => {
  const catalog = catalogWith();
  assert.deepEqual(
    catalog.get('git-hub')?.tools?.map((t) => t.tool),
    ['create_pull_request', 'search_issues'],
  );
  assert.equal(catalog.findServer('git_hub')?.name, 'git-hub');
  assert.equal(catalog.findTool('git-hub', 'create_pull_request')?.alias, 'create_pull_request');
});

test('the catalog is cached on disk and reloaded only for the same server config', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-catalog-'));
  const first = catalogWith(dir);
  await first.flush();
  const saved = JSON.parse(await readFile(join(dir, 'catalog.json'), 'utf8')) as {
    writers: Record<string, { pid: number; servers: Record<string, unknown> }>;
  };
  const [mine] = Object.values(saved.writers);
  assert.equal(mine?.pid, process.pid);
  assert.deepEqual(Object.keys(mine.servers).sort(), ['chat', 'git-hub']);
  const again = new ToolCatalog(
    [
      { name: 'chat', fingerprint: 'f1' },
      { name: 'git-hub', fingerprint: 'changed' },
    ],
    dir,
  );
  await again.load();
  assert.equal(again.get('chat')?.tools?.length, 2);
  assert.equal(again.get('git-hub')?.tools, undefined);
});

test("a write of catalog.json that fails is said and tried again, so the servers' states are not lost", async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-catalog-'));
  // A folder where the file goes: the write's rename fails until it is gone.
  await mkdir(join(dir, 'catalog.json'));
  const logged: string[] = [];
  let failed!: () => void;
  const failure = new Promise<void>((resolve) => (failed = resolve));
  const catalog = new ToolCatalog([{ name: 'ev', fingerprint: 'f' }], dir, (line) => {
    logged.push(line);
    failed();
  });
  catalog.setState('ev', 'running');
  await failure;
  assert.match(logged[0] ?? '', /^catalog\.json not saved: .+; trying again$/);
  await rmdir(join(dir, 'catalog.json'));
  await catalog.flush();
  const saved = JSON.parse(await readFile(join(dir, 'catalog.json'), 'utf8')) as {
    writers: Record<string, { servers: Record<string, { state?: string }> }>;
  };
  assert.equal(Object.values(saved.writers)[0]?.servers.ev?.state, 'running');
  assert.equal(logged.length, 1);
});

test("which tools run as tasks is kept in their records, from the bridge's own listing, not from the cache", async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-catalog-'));
  const listed = new ToolCatalog([{ name: 'ev', fingerprint: 'f' }], dir);
  listed.setTools('ev', [
    { name: 'research', execution: { taskSupport: 'required' } },
    { name: 'maybe', execution: { taskSupport: 'optional' } },
    { name: 'plain', execution: { taskSupport: 'forbidden' } },
  ]);
  assert.equal(listed.findTool('ev', 'research')?.taskSupport, 'required');
  assert.equal(listed.findTool('ev', 'maybe')?.taskSupport, 'optional');
  assert.equal(listed.findTool('ev', 'plain')?.taskSupport, undefined);
  await listed.flush();
  const cached = new ToolCatalog([{ name: 'ev', fingerprint: 'f' }], dir);
  await cached.load();
  assert.equal(cached.get('ev')?.tools?.length, 3);
  assert.equal(cached.findTool('ev', 'research')?.taskSupport, undefined, 'known only once this bridge lists the server');
});

test('a server listing more tools than the cap keeps the first MAX_TOOLS_PER_SERVER', () => {
  const catalog = new ToolCatalog([{ name: 'huge', fingerprint: 'f' }]);
  const tools = Array.from({ length: MAX_TOOLS_PER_SERVER + 5 }, (_, i) => ({ name: `t${i}` }));
  assert.equal(catalog.setTools('huge', tools).length, MAX_TOOLS_PER_SERVER);
});

test('a schema built to fan out costs little to render', () => {
  const refs = Array.from({ length: 50 }, () => ({ $ref: '#/$defs/A' }));
  const started = performance.now();
  const [param] = paramsOf({ properties: { x: { $ref: '#/$defs/A' } }, $defs: { A: { anyOf: refs } } });
  assert.ok(performance.now() - started < 500, `${performance.now() - started} ms`);
  assert.ok(param!.type.length <= 240);
});

test('reconfigure keeps the tools of unchanged servers, drops removed ones and starts changed ones afresh', async () => {
  const catalog = new ToolCatalog([
    { name: 'a-b', fingerprint: 'f1' },
    { name: 'gone', fingerprint: 'f2' },
    { name: 'changed', fingerprint: 'f3' },
  ]);
  catalog.setTools('a-b', [{ name: 'get-sum', inputSchema: { type: 'object' } }]);
  catalog.setTools('changed', [{ name: 'old', inputSchema: { type: 'object' } }]);
  await catalog.reconfigure([
    { name: 'a_b', fingerprint: 'f4' },
    { name: 'a-b', description: 'kept', fingerprint: 'f1' },
    { name: 'changed', fingerprint: 'f5' },
  ]);
  assert.deepEqual(catalog.names(), ['a_b', 'a-b', 'changed']);
  const kept = catalog.get('a-b')!;
  assert.equal(kept.alias, 'a_b_2', 'its alias follows the new list');
  assert.equal(kept.tools?.[0]?.serverAlias, 'a_b_2', 'and so do its tools');
  assert.equal(kept.tools?.[0]?.serverDescription, 'kept');
  assert.equal(catalog.get('changed')?.tools, undefined, 'a changed definition lists its tools again');
  assert.equal(catalog.get('changed')?.state, 'not-started');
  assert.equal(catalog.findServer('gone'), undefined);
  assert.deepEqual(
    catalog.search('sum', 5).map((t) => t.tool),
    ['get-sum'],
  );
});

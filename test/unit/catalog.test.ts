import assert from 'node:assert/strict';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pythonName, uniqueAliases } from '../../src/bridge/catalog/aliases.ts';
import { MAX_TOOLS_PER_SERVER, ToolCatalog } from '../../src/bridge/catalog/catalog.ts';
import { splitWords } from '../../src/bridge/catalog/search.ts';
import { paramsOf, signatureOf } from '../../src/bridge/catalog/signature.ts';

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
    signatureOf('search', params),
    'search(*, query: str, limit: int | None = None, "user-id": str | None | None = None, mode: Literal["fast", "slow"] | None = None, tags: list[str] | None = None)',
  );
  assert.equal(params.find((p) => p.name === 'user-id')?.identifier, false);
  assert.equal(signatureOf('ping', paramsOf(undefined)), 'ping()');
  assert.deepEqual(paramsOf({ properties: 'nonsense' }), []);
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
    { name: 'post_message', description: 'Post a message to a channel', inputSchema: { type: 'object', properties: { channel: { type: 'string' }, text: { type: 'string' } } } },
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
  assert.deepEqual(catalog.get('git-hub')?.tools?.map((t) => t.tool), ['create_pull_request', 'search_issues']);
  assert.equal(catalog.findServer('git_hub')?.name, 'git-hub');
  assert.equal(catalog.findTool('git-hub', 'create_pull_request')?.alias, 'create_pull_request');
});

test('the catalog is cached on disk and reloaded only for the same server config', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-catalog-'));
  const first = catalogWith(dir);
  await first.flush();
  const saved = JSON.parse(await readFile(join(dir, 'catalog.json'), 'utf8')) as { writers: Record<string, { pid: number; servers: Record<string, unknown> }> };
  const [mine] = Object.values(saved.writers);
  assert.equal(mine?.pid, process.pid);
  assert.deepEqual(Object.keys(mine.servers).sort(), ['chat', 'git-hub']);
  const again = new ToolCatalog([{ name: 'chat', fingerprint: 'f1' }, { name: 'git-hub', fingerprint: 'changed' }], dir);
  await again.load();
  assert.equal(again.get('chat')?.tools?.length, 2);
  assert.equal(again.get('git-hub')?.tools, undefined);
});

test('a server listing more tools than the cap keeps the first MAX_TOOLS_PER_SERVER', () => {
  const catalog = new ToolCatalog([{ name: 'huge', fingerprint: 'f' }]);
  const tools = Array.from({ length: MAX_TOOLS_PER_SERVER + 5 }, (_, i) => ({ name: `t${i}` }));
  assert.equal(catalog.setTools('huge', tools).length, MAX_TOOLS_PER_SERVER);
});

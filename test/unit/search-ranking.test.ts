// The ranking's parts, each on a small catalog made for it: coverage, server hints, the
// query's verb, questions, deleting tools, titles and annotations, word forms, speed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ToolRanker, type RankableTool } from '../../src/bridge/catalog/ranking.ts';

function tool(server: string, name: string, description: string, extra: Partial<RankableTool> = {}): RankableTool {
  return { server, tool: name, description, params: [], ...extra };
}

function top(tools: RankableTool[], query: string, limit = 3): string[] {
  return new ToolRanker(tools).rank(query, limit).map((i) => `${tools[i]!.server}/${tools[i]!.tool}`);
}

test('a tool answering all of the query beats one matching its first word by name', () => {
  const tools = [
    tool('memory', 'add_observations', 'Add new observations to existing entities in the knowledge graph'),
    tool('github', 'add_issue_comment', 'Add a comment to an existing issue'),
    tool('everything', 'get-sum', 'Returns the sum of two numbers', { params: [{ name: 'a' }, { name: 'b' }] }),
  ];
  assert.equal(top(tools, 'add two numbers')[0], 'everything/get-sum');
  assert.equal(top(tools, 'add a comment to an issue')[0], 'github/add_issue_comment');
});

test('a server named in the query is a hint, also for tools that match nothing else', () => {
  const tools = [
    tool('slack', 'slack_get_users', 'Get a list of all users in the workspace'),
    tool('slack', 'slack_get_user_profile', 'Get detailed profile information for a specific user'),
    tool('github', 'search_users', 'Search for users on GitHub'),
    tool('github', 'list_commits', 'Get list of commits of a branch'),
    tool('postgres', 'query', 'Run a read-only SQL query'),
    tool('puppeteer', 'puppeteer_select', 'Select an element on the page'),
  ];
  assert.equal(top(tools, 'look for a github user')[0], 'github/search_users');
  assert.equal(top(tools, 'find users in slack')[0], 'slack/slack_get_users');
  // Named alone, with nothing else of the query in its text, the server's tool is still found.
  assert.ok(top(tools, 'postgres orders').includes('postgres/query'));
  // Only the server's name: its tools, in their order.
  assert.deepEqual(top(tools, 'github'), ['github/search_users', 'github/list_commits']);
  // "search" is in other servers' tool names: never a hint for a server called brave-search.
  const withBrave = [...tools, tool('brave-search', 'brave_web_search', 'Performs a web search')];
  assert.equal(top(withBrave, 'search users')[0], 'github/search_users');
});

test("the query's verb picks the tool's action; a question asks to read", () => {
  const tools = [
    tool('github', 'list_pull_requests', 'List and filter repository pull requests'),
    tool('github', 'create_pull_request', 'Create a new pull request in a GitHub repository'),
    tool('github', 'get_pull_request_reviews', 'Get the reviews on a pull request'),
    tool('github', 'create_pull_request_review', 'Create a review on a pull request'),
  ];
  assert.equal(top(tools, 'open a pull request')[0], 'github/create_pull_request');
  assert.equal(top(tools, 'list pull requests')[0], 'github/list_pull_requests');
  const labels = [tool('github', 'create_label', 'Create a label in a repository'), tool('github', 'list_labels', 'List the labels of a repository')];
  assert.equal(top(labels, 'a label in a repository')[0], 'github/create_label');
  assert.equal(top(labels, 'which label exists in a repository')[0], 'github/list_labels');
});

test('a tool that deletes is first only when the query asks to delete', () => {
  const tools = [
    tool('memory', 'delete_entities', 'Delete multiple entities and their associated relations from the knowledge graph'),
    tool('memory', 'create_entities', 'Create multiple new entities in the knowledge graph'),
  ];
  assert.equal(top(tools, 'entities in the knowledge graph')[0], 'memory/create_entities');
  assert.equal(top(tools, 'remove entities from the knowledge graph')[0], 'memory/delete_entities');
  // The server's own word wins over the name's verb.
  const annotated = [
    tool('x', 'purge_cache', 'Purge entities cached', { annotations: { destructiveHint: true } }),
    tool('x', 'cache_entities', 'Cache entities'),
  ];
  assert.equal(top(annotated, 'cached entities')[0], 'x/cache_entities');
});

test('titles and annotations are used when a server gives them, and ignored when malformed', () => {
  const plain = [tool('a', 'op_17', 'Does things'), tool('a', 'op_18', 'Does other things')];
  const titled = [plain[0]!, { ...plain[1]!, title: 'Resize an image' }];
  assert.deepEqual(top(plain, 'resize an image'), []);
  assert.equal(top(titled, 'resize an image')[0], 'a/op_18');
  const annotated = [tool('a', 'op_1', 'Does things', { annotations: { title: 'Resize an image' } }), plain[1]!];
  assert.equal(top(annotated, 'resize an image')[0], 'a/op_1');
  const bad = [tool('a', 'op_1', 'Does things', { title: 42, annotations: 'nope' }), plain[1]!];
  assert.deepEqual(top(bad, 'resize an image'), []);
});

test('word forms: stems, derived words, compounds, typos, the intent table', () => {
  const tools = [
    tool('memory', 'create_relations', 'Create relations between entities'),
    tool('memory', 'delete_relations', 'Delete multiple relations from the knowledge graph'),
    tool('sequential-thinking', 'sequentialthinking', 'A tool for dynamic problem-solving through thoughts'),
    tool('fs', 'create_directory', 'Create a new directory'),
  ];
  assert.equal(top(tools, 'remove a relationship')[0], 'memory/delete_relations');
  assert.equal(top(tools, 'sequential thinking')[0], 'sequential-thinking/sequentialthinking');
  assert.equal(top(tools, 'make a new folder')[0], 'fs/create_directory');
  assert.equal(top(tools, 'create a directroy')[0], 'fs/create_directory');
});

test('empty and stop-word queries find nothing; limit is honoured; ties keep catalog order', () => {
  const tools = [tool('a', 'read_file', 'Read a file'), tool('b', 'read_file', 'Read a file'), tool('c', 'read_file', 'Read a file')];
  assert.deepEqual(top(tools, ''), []);
  assert.deepEqual(top(tools, 'the of a'), []);
  assert.deepEqual(top(tools, 'read a file', 2), ['a/read_file', 'b/read_file']);
  assert.deepEqual(new ToolRanker(tools).rank('read a file', 0), []);
  assert.deepEqual(new ToolRanker([]).rank('read a file', 5), []);
});

test('a query over 5,000 tools stays within a few milliseconds', () => {
  const words = ['create', 'list', 'delete', 'update', 'get', 'search', 'file', 'issue', 'message', 'channel', 'user', 'page', 'entity', 'graph'];
  const tools = Array.from({ length: 5000 }, (_, i) =>
    tool(`server-${i % 50}`, `${words[i % 14]}_${words[(i * 7) % 14]}_${i}`, `${words[(i * 3) % 14]} a ${words[(i * 5) % 14]} in the ${words[(i * 11) % 14]}`),
  );
  const ranker = new ToolRanker(tools);
  ranker.rank('warm up the search', 5);
  const start = performance.now();
  for (let i = 0; i < 20; i++) ranker.rank('list the messages of a channel', 5);
  // Generous: the bench measures the real figure (about 1.5 ms); this only catches a blow-up.
  assert.ok((performance.now() - start) / 20 < 50);
});

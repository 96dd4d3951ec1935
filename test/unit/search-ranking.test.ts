// The ranking's parts, each on a small catalog made for it: coverage, server hints, the
// query's verb, questions, deleting tools, titles and annotations, word forms, speed.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { COLLOCATIONS, PHRASES, SAME_ACTION, SAME_THING, SHORTHANDS, TOPICS } from '../../src/bridge/catalog/lexicon.ts';
import { MAX_QUERY_WORDS, MIN_SCORE, ToolRanker, wordsOf, type RankableTool } from '../../src/bridge/catalog/ranking.ts';
import { readQuery } from '../../src/bridge/catalog/ranking/query.ts';
import { ToolCatalog } from '../../src/bridge/catalog/catalog.ts';
import { ToolIndex } from '../../src/bridge/catalog/search.ts';
import { QUERY_SETS, realCatalog } from '../helpers/search-eval.ts';

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
  const labels = [
    tool('github', 'create_label', 'Create a label in a repository'),
    tool('github', 'list_labels', 'List the labels of a repository'),
  ];
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

test('a tool that deletes by its description, or asked for in other words, ranks as one; a server-marked tool whose action is the verb is not held back', () => {
  const tools = [
    tool('x', 'cleanup_notes', 'Removes notes older than a week from the store'),
    tool('x', 'add_notes', 'Adds notes to the store'),
  ];
  assert.equal(top(tools, 'notes in the store')[0], 'x/add_notes');
  assert.equal(top(tools, 'get rid of the old notes in the store')[0], 'x/cleanup_notes');
  assert.equal(top(tools, 'wipe the notes in the store')[0], 'x/cleanup_notes');
  // A server may mark write_file destructive (it overwrites): "write a file" still wants it.
  const files = [
    tool('fs', 'write_file', 'Create a new file or overwrite an existing file', { annotations: { destructiveHint: true } }),
    tool('fs', 'create_directory', 'Create a new directory'),
  ];
  assert.equal(top(files, 'write a file')[0], 'fs/write_file');
});

test('each hit has a score from 0 to 1 that never rises down the list; a request no tool serves scores low', () => {
  const catalog = realCatalog();
  const ranker = new ToolRanker(catalog.allTools());
  for (const query of ['read a file', 'Remember that Alice works at Acme', 'send a message on discord', 'how far is paris from berlin']) {
    const hits = ranker.scored(query, 5);
    assert.ok(hits.length > 0, query);
    for (const [i, hit] of hits.entries()) {
      assert.ok(hit.relevance >= 0 && hit.relevance <= 1, `${query}: ${hit.relevance}`);
      if (i > 0) assert.ok(hit.relevance <= hits[i - 1]!.relevance, query);
    }
  }
  const best = (query: string) => ranker.scored(query, 1)[0]?.relevance ?? 0;
  assert.ok(best('read the contents of a file') > 0.5);
  assert.ok(best('book a flight from Boston to Denver next Friday') < MIN_SCORE);
  // The catalog answers nothing under the threshold, and scores with its hits otherwise.
  assert.deepEqual(catalog.find('book a flight from Boston to Denver next Friday', 5), []);
  const [hit] = catalog.find('read the contents of a file', 5);
  assert.equal(hit?.entry.server, 'filesystem');
  assert.ok(hit.score >= MIN_SCORE && hit.score <= 1);
});

test("a key word no tool has (the verb, the head of what it acts on, a service named before it) lowers every hit's score; a value does not", () => {
  const tools = [
    tool('slack', 'slack_post_message', 'Post a new message to a Slack channel'),
    tool('slack', 'slack_reply_to_thread', 'Reply to a specific message thread in Slack'),
    tool('filesystem', 'read_file', 'Read the complete contents of a file from the file system'),
  ];
  const ranker = new ToolRanker(tools);
  const best = (query: string) => ranker.scored(query, 3)[0]?.relevance ?? 0;
  const known = best('post the message to the channel');
  assert.ok(known > 0.8, `${known}`);
  // The verb: a request to do what no tool does.
  assert.ok(best('forward the message to the channel') < known / 2);
  // The head of what it acts on (it counts less: a thing may have many names), and a service
  // named before that head ("a Teams message").
  assert.ok(best('post the thermostat to the channel') < known * 0.8);
  assert.ok(best('post the Teams message to the channel') < known / 2);
  // Values are not what is asked for: names, quoted text, paths, numbers, a name's 's.
  for (const query of [
    'post the message to the channel for Alice',
    "post 'deploy finished' to the channel",
    'post the message to the channel #releases-2026',
    "reply to Tom's thread",
  ]) {
    assert.ok(best(query) > 0.8, query);
  }
  assert.equal(best('post the message to the channel for Alice'), best('post the message to the channel for alice'));
  // The words after the noun phrase are not key words: a place, a person ("on" a well-known
  // service no server mentions counts apart, below).
  assert.ok(best('read the file for Alice in Lyon') > 0.8);
  // Over the real catalog, such a request is answered with nothing.
  assert.deepEqual(realCatalog().find('check my Gmail inbox for invoices', 5), []);
  // Scores stay in order down the list, and the same query scores the same.
  const hits = ranker.scored('post the thermostat to the channel', 3);
  for (let i = 1; i < hits.length; i++) assert.ok(hits[i]!.relevance <= hits[i - 1]!.relevance);
  assert.deepEqual(ranker.scored('post the thermostat to the channel', 3), hits);
});

test("a well-known service no configured server mentions lowers every hit's score, unless the catalog mentions it", () => {
  const catalog = realCatalog();
  const tools = catalog.allTools();
  const ranker = new ToolRanker(tools);
  // Named in any form, past values ("facebook/react", an address), common words only when written as names.
  assert.deepEqual(ranker.unserved('send a Teams message to QA'), ['Microsoft Teams']);
  assert.deepEqual(ranker.unserved('copy the reports to google drive and ping me by SMS'), ['Google Drive', 'SMS']);
  assert.deepEqual(ranker.unserved('merge the GitLab merge request'), ['GitLab']);
  assert.deepEqual(ranker.unserved('list the teams of the org, a linear history'), []);
  assert.deepEqual(ranker.unserved('fork facebook/react and mail bob@dropbox.com'), []);
  assert.deepEqual(ranker.unserved('put my email in the input'), []);
  // Configured services are known: github, slack, postgres.
  assert.deepEqual(ranker.unserved('open a GitHub issue and post it on Slack'), []);
  // A request naming one is answered with nothing, where without the rule it was not.
  const request = 'back up the reports folder to Google Drive';
  assert.ok(new ToolIndex(tools, { unservedService: 0 }).find(request, 5).length > 0);
  assert.deepEqual(catalog.find(request, 5), []);
  assert.deepEqual(catalog.find('share this file on Dropbox', 5), []);
  // A hit that answers the rest strongly still answers, its score lowered.
  const [web] = catalog.find('search the web for Dropbox pricing plans', 5);
  assert.equal(web?.entry.tool, 'brave_web_search');
  assert.ok(web.score < new ToolIndex(tools, { unservedService: 0 }).find('search the web for Dropbox pricing plans', 1)[0]!.score);
  // Once a server mentions the service, its tool comes first and the request is answered.
  const lists = (JSON.parse(readFileSync('test/fixtures/tool-lists.json', 'utf8')) as { servers: Record<string, { tools: unknown[] }> })
    .servers;
  const withDrive = new ToolCatalog([...Object.keys(lists), 'drive'].map((name) => ({ name, fingerprint: name })));
  for (const [name, server] of Object.entries(lists)) withDrive.setTools(name, server.tools);
  withDrive.setTools('drive', [
    { name: 'upload_file', description: 'Upload a local file to a Google Drive folder', inputSchema: { type: 'object' } },
  ]);
  assert.deepEqual(withDrive.unserved(request), []);
  const [first] = withDrive.find(request, 5);
  assert.equal(`${first?.entry.server}/${first?.entry.tool}`, 'drive/upload_file');
});

test('the key words of a request: its verb, the head of what it acts on, a name before that head', () => {
  const keys = (query: string) => {
    const read = readQuery(query, new Map());
    return Object.fromEntries([...read.keys].map(([at, role]) => [read.words[at]!, role]));
  };
  assert.deepEqual(keys('set the thermostat to 21 degrees'), { set: 'verb', thermostat: 'head' });
  assert.deepEqual(keys('stop the staging EC2 instance'), { stop: 'verb', instance: 'head' });
  assert.deepEqual(keys('check my Gmail inbox for invoices'), { check: 'verb', gmail: 'name', inbox: 'head' });
  assert.deepEqual(keys('skip to the next song'), { skip: 'verb', song: 'head' });
  assert.deepEqual(keys('can you turn off the living room lights'), { turn: 'verb', lights: 'head' });
  assert.deepEqual(keys("what's the weather in Paris"), { weather: 'head' });
  // A person is a value: as what the verb acts on, with 's, or in a clause.
  assert.deepEqual(keys('look up Bob in the knowledge graph'), { look: 'verb' });
  assert.deepEqual(keys("reply to Tom's thread"), { reply: 'verb', thread: 'head' });
  assert.deepEqual(keys('remember that Alice works at Acme'), { remember: 'verb' });
  assert.deepEqual(keys('read report-final.docx'), { read: 'verb' });
  assert.deepEqual(keys('just list the files'), { list: 'verb', files: 'head' });
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

test('the lexicon: other words for an action or a thing, phrases, a verb read by its object', () => {
  const tools = [
    tool('browser', 'click', 'Click an element on the page'),
    tool('browser', 'hover', 'Hover an element on the page'),
    tool('browser', 'navigate', 'Navigate to a URL'),
    tool('maps', 'distance_matrix', 'Calculate travel distance and time for multiple origins and destinations'),
    tool('maps', 'elevation', 'Get elevation data for locations on the earth'),
    tool('fs', 'read_text_file', 'Read the complete contents of a file as text'),
    tool('fs', 'get_file_info', 'Retrieve detailed metadata about a file: size, creation time, last modified time'),
    tool('fs', 'edit_file', 'Make line-based edits to a text file'),
    tool('gh', 'create_issue', 'Create a new issue in a repository'),
    tool('gh', 'add_issue_comment', 'Add a comment to an existing issue'),
    tool('web', 'web_search', 'Performs a web search: general queries, news, articles and online content'),
    tool('calc', 'get_sum', 'Returns the sum of two numbers', { params: [{ name: 'a' }, { name: 'b' }] }),
  ];
  // Words the tools never use: the lexicon's other words for the same action or thing.
  assert.equal(top(tools, 'press the login button')[0], 'browser/click');
  assert.equal(top(tools, 'search the internet')[0], 'web/web_search');
  assert.equal(top(tools, 'latest news')[0], 'web/web_search');
  // Two words meaning what neither says ("how far", "mouse over"), also with an article between.
  assert.equal(top(tools, 'how far is it from paris to lyon')[0], 'maps/distance_matrix');
  assert.equal(top(tools, 'how high above sea level is this town')[0], 'maps/elevation');
  assert.equal(top(tools, 'move the mouse over a menu')[0], 'browser/hover');
  // Two stop words with a meaning are a query word of their own.
  assert.equal(top(tools, 'when was this file last changed')[0], 'fs/get_file_info');
  // "open" reads a file, goes to a website, creates an issue.
  assert.equal(top(tools, 'open a file')[0], 'fs/read_text_file');
  assert.equal(top(tools, 'open a website')[0], 'browser/navigate');
  assert.equal(top(tools, 'open a ticket')[0], 'gh/create_issue');
  // Numbers speak of numbers.
  assert.equal(top(tools, 'add 19 and 23')[0], 'calc/get_sum');
  // Without the lexicon none of these words would be found.
  assert.deepEqual(new ToolRanker(tools, { related: 0 }).rank('press the login button', 3), []);
});

test('the lexicon is written as queries are read: lowercase single words, phrases of two', () => {
  const single = (w: string): boolean => wordsOf(w).length === 1 && wordsOf(w)[0] === w;
  for (const group of [...SAME_ACTION, ...SAME_THING, ...TOPICS]) for (const w of group) assert.ok(single(w), w);
  for (const [short, long] of SHORTHANDS) for (const w of [short, ...long]) assert.ok(single(w), w);
  for (const [phrase, meaning] of PHRASES) {
    // Articles are skipped when phrases are matched, so a phrase has none.
    assert.ok(phrase.split(' ').length === 2 && phrase.split(' ').every((w) => single(w) && !['a', 'an', 'the'].includes(w)), phrase);
    for (const w of meaning) assert.ok(single(w), w);
  }
  for (const [verb, objects, meaning] of COLLOCATIONS) for (const w of [verb, ...objects, ...meaning]) assert.ok(single(w), w);
});

test('a polite opening is not the request; a state after "is" is no action; a question word asks for its kind', () => {
  const tools = [
    tool('slack', 'post_message', 'Post a new message to a channel'),
    tool('slack', 'get_channel_history', 'Get recent messages from a channel'),
    tool('gh', 'create_issue', 'Create a new issue in a repository'),
    tool('gh', 'list_issues', 'List issues in a repository with filtering options', {
      params: [{ name: 'state', type: 'Literal["open", "closed"]' }],
    }),
    tool('gh', 'add_issue_comment', 'Add a comment to an existing issue'),
    tool('gh', 'get_pull_request_reviews', 'Get the reviews on a pull request'),
    tool('gh', 'search_users', 'Search for users on GitHub'),
  ];
  // The verb after "can you", "how do I", "is there a tool to" leads, as if said first.
  const parts = (q: string): Record<string, number> => new ToolRanker(tools).scored(q, 1)[0]!.parts;
  assert.equal(top(tools, 'can you post hello in the channel')[0], 'slack/post_message');
  assert.equal(parts('can you post hello in the channel')['leadAction'], 1);
  assert.equal(parts('how do I open an issue')['leadAction']! > 0, true);
  assert.equal(top(tools, 'is there a tool to open an issue')[0], 'gh/create_issue');
  // "are open" is the issues' state: nothing to create.
  assert.equal(top(tools, 'which issues are open')[0], 'gh/list_issues');
  // "who" asks for people.
  assert.equal(top(tools, 'who on github is called torvalds')[0], 'gh/search_users');
});

test('a plain word a server is named after is not a server hint', () => {
  const tools = [
    tool('everything', 'get_env', 'Returns all environment variables'),
    tool('memory', 'read_graph', 'Read the entire knowledge graph'),
  ];
  assert.equal(top(tools, 'dump everything in the knowledge graph')[0], 'memory/read_graph');
});

test('only the first words of a long query count, and a long query over 5,000 tools answers', () => {
  const tools = [tool('a', 'read_file', 'Read a file'), tool('b', 'resize_image', 'Resize an image')];
  const filler = Array.from({ length: MAX_QUERY_WORDS - 1 }, () => 'file').join(' ');
  assert.ok(top(tools, `${filler} image`).includes('b/resize_image'));
  assert.deepEqual(top(tools, `${filler} file image`), ['a/read_file']);
  // Phrases and verbs with objects everywhere, over 5,000 tools.
  const words = ['open', 'a', 'file', 'how', 'far', 'mouse', 'over', 'when', 'was', 'run', 'sql', 'the', 'issue', '42'];
  const query = Array.from({ length: 1000 }, (_, i) => `${words[i % words.length]}${i % 3 === 0 ? i : ''}`).join(' ');
  const many = Array.from({ length: 5000 }, (_, i) =>
    tool(
      `s${i % 50}`,
      `${['read', 'open', 'create', 'run'][i % 4]}_${['file', 'issue', 'query', 'page'][(i >> 2) % 4]}_${i}`,
      `Open, read or create a file, an issue or a page ${i}`,
    ),
  );
  const ranker = new ToolRanker(many);
  ranker.rank('warm up', 5);
  // How fast is for `npm run bench` (bench/search.ts); here: a 1,000-word query over 5,000 tools answers.
  assert.equal(ranker.rank(query, 5).length, 5);
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
  const words = [
    'create',
    'list',
    'delete',
    'update',
    'get',
    'search',
    'file',
    'issue',
    'message',
    'channel',
    'user',
    'page',
    'entity',
    'graph',
  ];
  const tools = Array.from({ length: 5000 }, (_, i) =>
    tool(
      `server-${i % 50}`,
      `${words[i % 14]}_${words[(i * 7) % 14]}_${i}`,
      `${words[(i * 3) % 14]} a ${words[(i * 5) % 14]} in the ${words[(i * 11) % 14]}`,
    ),
  );
  const ranker = new ToolRanker(tools);
  ranker.rank('warm up the search', 5);
  // The fastest of twenty, generous: the bench measures the real figure (about 1.5 ms); this only
  // catches a blow-up, not a machine busy with other tests at the same time.
  let ms = Infinity;
  for (let i = 0; i < 20; i++) {
    const start = performance.now();
    ranker.rank('list the messages of a channel', 5);
    ms = Math.min(ms, performance.now() - start);
  }
  assert.ok(ms < 50, `${ms} ms`);
});

test('servers left out are skipped in the ranker: the others rank as they would, and the limit is still filled', () => {
  const catalog = realCatalog();
  const { queries } = JSON.parse(readFileSync(QUERY_SETS.tuned, 'utf8')) as { queries: Array<{ query: string }> };
  const name = (t: { server: string; tool: string }) => `${t.server}/${t.tool}`;
  let compared = 0;
  for (const { query } of queries.slice(0, 40)) {
    const all = catalog.search(query, 10_000);
    if (all.length === 0) continue;
    // The server of the best hit, and the one with the most tools, are hidden.
    const hidden = new Set([all[0]!.server, 'github']);
    const expected = all.filter((t) => !hidden.has(t.server)).slice(0, 5);
    const got = catalog.search(query, 5, hidden);
    assert.deepEqual(got.map(name), expected.map(name), query);
    assert.ok(got.every((t) => !hidden.has(t.server)));
    compared++;
  }
  assert.ok(compared >= 30, `${compared} queries compared`);
});

test("with one server, a request to remember ranks memory's deleting tools below every other, at a score that says they do not answer", () => {
  const lists = JSON.parse(readFileSync('test/fixtures/tool-lists.json', 'utf8')) as { servers: { memory: { tools: unknown[] } } };
  const catalog = new ToolCatalog([{ name: 'memory', fingerprint: 'memory' }]);
  catalog.setTools('memory', lists.servers.memory.tools);
  for (const query of ['Remember that Alice works at Acme', 'relationship management']) {
    const hits = catalog.find(query, 9);
    const names = hits.map((h) => `${h.entry.tool} ${h.score.toFixed(3)}`).join(', ');
    // Every tool that answers at all (a score of 0.01 or more) comes before the first deleting one.
    const firstDelete = hits.findIndex((h) => h.entry.tool.startsWith('delete_'));
    const lastAnswering = hits.findLastIndex((h) => !h.entry.tool.startsWith('delete_') && h.score >= 0.01);
    assert.ok(firstDelete === -1 || firstDelete > lastAnswering, `${query}: ${names}`);
    for (const hit of hits) if (hit.entry.tool.startsWith('delete_')) assert.ok(hit.score < 0.01, `${hit.entry.tool} scores ${hit.score}`);
  }
  assert.equal(catalog.find('Remember that Alice works at Acme', 1)[0]?.entry.tool, 'create_relations');
});

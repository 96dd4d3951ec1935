// The agent-task suite: the fourteen kinds of task an agent does with run_python (discover,
// read and aggregate files, a memory graph, images, concurrent calls, blocked capabilities, its
// own mistakes, persistence, a search nothing fits, a resource read, an image with packages, a
// file out, a timeout that keeps state, a search with weak hits only), run through the real bridge over stdio with real npm MCP servers,
// each asserting what matters to the model: what it is handed stays within the output budget in
// both forms (the text most clients read and the JSON of structuredContent VS Code hands it),
// every error carries its fix, images come once and never as base64 text, state persists.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { encode } from 'gpt-tokenizer';
import {
  Agent,
  base64In,
  duplicateImages,
  FILE_WHERE,
  FORM_LIMIT,
  modelListing,
  NAMES_NUMPY,
  NO_NETWORK,
  NO_PIP,
  NOTHING_FITS,
  runTask,
  saysIn,
  startTaskBench,
  STATE_KEPT,
  TASKS,
  WEAK_HITS,
  type CallRecord,
  type TaskBench,
} from '../helpers/agent-tasks.ts';
import { TEST_IMAGE, testRuntimes } from '../helpers/env.ts';
import { WEAK_SCORE } from '../../src/bridge/catalog/ranking.ts';

const [runtime = 'podman'] = testRuntimes();
const READ_LIMIT_BYTES = 10 * 1024 * 1024;

function show(record: CallRecord): string {
  const cut = (s: string) => (s.length > 1500 ? `${s.slice(0, 1000)}\n[...]\n${s.slice(-400)}` : s);
  return `\n--- ${record.label} (task ${record.task}), text:\n${cut(record.text)}\n--- structured:\n${cut(record.structuredJson)}`;
}

/** The fix must be in both forms: VS Code reads only the structured one, other clients only the text. */
function assertSays(record: CallRecord, pattern: RegExp, what: string): void {
  const found = saysIn(record, pattern);
  assert.ok(
    found.text && found.structured,
    `${what} (${pattern}): in the text ${found.text}, in the structured content ${found.structured}${show(record)}`,
  );
}

/** The servers of the task bench, each named in what a call says. */
function assertNamesServers(record: CallRecord): void {
  for (const name of ['memory', 'filesystem', 'fixture', 'shots']) assertSays(record, new RegExp(`\\b${name}\\b`), 'a configured server');
}

/** The agent made no call after the one labelled `label`. */
function assertNoCallAfter(agent: Agent, label: string): void {
  const later = agent.calls.slice(agent.calls.indexOf(agent.call(label)) + 1);
  assert.deepEqual(
    later.map((c) => c.label),
    [],
    `calls after ${label}: ${later.map((c) => c.label).join(', ')}`,
  );
}

function assertWithinBudget(agent: Agent, labels?: string[]): void {
  for (const call of agent.calls) {
    if (labels && !labels.includes(call.label)) continue;
    assert.ok(call.text.length <= FORM_LIMIT, `${call.label}: ${call.text.length} characters of text${show(call)}`);
    assert.ok(
      call.structuredJson.length <= FORM_LIMIT,
      `${call.label}: ${call.structuredJson.length} characters of structured content${show(call)}`,
    );
    assert.ok(call.resultBytes < READ_LIMIT_BYTES / 2, `${call.label}: the result is ${call.resultBytes} bytes`);
  }
}

const task = (id: number) => TASKS.find((t) => t.id === id)!;

describe(`agent tasks on ${runtime}`, () => {
  let bench: TaskBench;

  before(async () => {
    bench = await startTaskBench(runtime, TEST_IMAGE);
  });
  after(async () => {
    await bench?.close();
  });

  describe('what the model reads first', () => {
    test('the listing is one tool of at most 200 tokens (name, description, input schema)', () => {
      assert.deepEqual(
        bench.listing.tools.map((t) => (t as { name: string }).name),
        ['run_python'],
      );
      const tokens = encode(JSON.stringify(modelListing(bench))).length;
      assert.ok(tokens <= 200, `the listing is ${tokens} tokens`);
    });

    test('the listing says the essentials: standard library, ToolError, full docs, images, the budget', () => {
      const description = bench.listing.description;
      for (const pattern of [
        /standard library|stdlib|installed packages/i,
        /ToolError/,
        /detail\s*=\s*["']full["']|query_tool_docs/,
        /image/i,
        /budget|cap(ped|s)?\b|truncat|\d[\d,]*\s*k?\s*(characters|chars)/i,
      ]) {
        assert.match(description, pattern);
      }
    });

    test('every parameter of run_python has a short description', () => {
      const schema = (bench.listing.tools[0] as { inputSchema: { properties: Record<string, { description?: string }> } }).inputSchema;
      for (const [name, property] of Object.entries(schema.properties)) {
        assert.ok(property.description && property.description.length <= 120, `${name}: ${JSON.stringify(property.description)}`);
      }
    });

    test("the bridge's instructions name the proxied servers", () => {
      for (const name of ['memory', 'filesystem', 'fixture', 'shots'])
        assert.match(bench.listing.instructions, new RegExp(`(?:\\b|mcp_)${name}\\b`));
    });
  });

  describe('1 discover', () => {
    let agent: Agent;
    before(async () => {
      agent = await runTask(task(1), bench);
    });

    test('discovered_servers() names every server', () => {
      const call = agent.call('servers');
      assert.equal(call.status, 'ok', show(call));
      for (const name of ['memory', 'filesystem', 'fixture', 'shots']) assert.match(call.text, new RegExp(`'${name}'`));
    });

    test('search puts the tool for each need first', (t) => {
      if (!agent.has('search')) {
        // The agent did not search because the servers' listing named the tools it needed.
        assert.match(agent.call('servers').text, /read_text_file/);
        assert.match(agent.call('servers').text, /search_nodes/);
        return t.diagnostic('no search: the listing named the tools');
      }
      const call = agent.call('search');
      assert.equal(call.status, 'ok', show(call));
      assert.match(call.text, /read the contents of a text file\n {2}filesystem\.read_text_file:/);
      assert.match(call.text, /find entities in the knowledge graph by name\n {2}memory\.search_nodes:/);
    });

    test('help() shows the signatures', () => {
      const call = agent.call('help');
      assert.match(call.text, /read_text_file\(\*, path: '?str'?/);
      assert.match(call.text, /search_nodes\(\*, query: '?str'?/);
    });

    test('discovered_servers() lists tool names from the catalog', () => {
      const call = agent.call('servers');
      for (const tool of ['create_entities', 'read_text_file', 'screenshot']) assertSays(call, new RegExp(`\\b${tool}\\b`), 'a tool name');
    });

    test('every run is within the budget', () => assertWithinBudget(agent));
  });

  describe('2 read and aggregate files', () => {
    let agent: Agent;
    before(async () => {
      agent = await runTask(task(2), bench);
    });

    test('the counts are right', () => {
      const call = agent.call('count');
      assert.equal(call.status, 'ok', show(call));
      const { counts } = bench.files;
      for (const [name, c] of Object.entries(counts))
        assert.match(call.text, new RegExp(`${name.replace('.', '\\.')}: ${c.lines} lines, ${c.words} words`));
      const lines = Object.values(counts).reduce((n, c) => n + c.lines, 0);
      const words = Object.values(counts).reduce((n, c) => n + c.words, 0);
      assert.match(call.text, new RegExp(`total: ${lines} lines, ${words} words`));
    });

    test('the other runs are within the budget', () => assertWithinBudget(agent, ['list', 'count']));

    test('a print loop over 250 KB is cut to the budget in both forms, head and tail kept, with a hint', () => {
      const call = agent.call('look');
      assert.equal(call.status, 'ok', show(call));
      assertWithinBudget(agent, ['look']);
      assert.match(call.text, /^app\.log \{'content': '2026-12-01T10:00:00Z/m, 'the head is kept');
      assert.match(call.text, /40\. [^\n]*'\}/, 'the tail is kept');
      assertSays(call, /print less|summari[sz]e/i, 'the cut comes with a hint');
    });
  });

  describe('3 memory graph', () => {
    let agent: Agent;
    before(async () => {
      agent = await runTask(task(3), bench);
    });

    test('the graph is built and found', () => {
      assert.equal(agent.call('build').status, 'ok', show(agent.call('build')));
      const call = agent.call('query');
      assert.equal(call.status, 'ok', show(call));
      assert.match(call.text, /Analytical Engine/);
    });

    test('every run is within the budget', () => assertWithinBudget(agent));

    test('help() shows the fields of nested parameters', () => {
      const call = agent.call('help');
      for (const field of ['entityType', 'observations', 'relationType']) assert.match(call.text, new RegExp(field));
    });
  });

  describe('4 return an image', () => {
    let agent: Agent;
    before(async () => {
      agent = await runTask(task(4), bench);
    });

    test('an emitted PNG reaches the model as one image, and no base64 as text', () => {
      const call = agent.calls.find((c) => c.images.length > 0 && (c.label === 'chart' || c.label === 'matplotlib'));
      assert.ok(call, 'a chart was emitted');
      assert.equal(call.images.length, 1, show(call));
      assert.equal(call.images[0]!.mime, 'image/png');
      assert.deepEqual(base64In(call), []);
    });

    test('a returned tool image reaches the model once', () => {
      const call = agent.call('screenshot');
      assert.equal(call.status, 'ok', show(call));
      assert.equal(call.images.length, 1);
    });

    test('every result stays well under the MCP client read limit', () => {
      for (const call of agent.calls) assert.ok(call.resultBytes < READ_LIMIT_BYTES / 2, `${call.label}: ${call.resultBytes} bytes`);
    });

    test('no base64 in the text or the value of a returned tool image', () => {
      const known = agent.calls.flatMap((c) => c.images);
      for (const call of agent.calls) assert.deepEqual(base64In(call, known), [], `${call.label}${show(call)}`);
    });

    test('the same image is never attached twice to one result', () => {
      for (const call of agent.calls) assert.equal(duplicateImages(call), 0, `${call.label}: ${call.images.length} images`);
    });

    test('tool images reach the model only when the code emits or returns them', () => {
      const call = agent.call('sizes');
      assert.equal(call.status, 'ok', show(call));
      assert.equal(call.images.length, 1, `three screenshots taken, the largest shown: ${call.images.length} images attached`);
    });

    test('every run is within the budget', () => assertWithinBudget(agent));
  });

  describe('5 concurrent calls', () => {
    let agent: Agent;
    before(async () => {
      agent = await runTask(task(5), bench);
    });

    test('five one-second calls and three reads are under way at once', () => {
      const call = agent.call('gather');
      assert.equal(call.status, 'ok', show(call));
      assert.match(call.text, /5 slow calls and 3 reads in [\d.]+ s/);
      assert.equal(call.toolCalls.length, 8, JSON.stringify(call.toolCalls));
      // The run log's times, not a clock window: a moment when all five slow calls were under way.
      const slow = call.toolCalls.filter((c) => c.tool === 'sleep');
      assert.equal(slow.length, 5);
      const lastStart = Math.max(...slow.map((c) => Date.parse(c.time) - c.durationMs));
      const firstEnd = Math.min(...slow.map((c) => Date.parse(c.time)));
      assert.ok(lastStart < firstEnd, `the last slow call started ${lastStart - firstEnd} ms after the first ended`);
      for (const [name, c] of Object.entries(bench.files.counts))
        assert.match(call.text, new RegExp(`'${name.replace('.', '\\.')}': ${c.chars}\\b`));
    });

    test('every run is within the budget', () => assertWithinBudget(agent));
  });

  describe('6 blocked capabilities', () => {
    let agent: Agent;
    before(async () => {
      agent = await runTask(task(6), bench);
    });

    test('writing outside /work fails as read-only; /work is writable; the totals are right', () => {
      const outside = agent.call('save-outside');
      assert.equal(outside.status, 'error');
      assertSays(outside, /Read-only file system/, 'the write outside /work');
      const save = agent.call('save');
      assert.equal(save.status, 'ok', show(save));
      for (const [region, total] of Object.entries(bench.files.regionTotals))
        assert.match(save.text, new RegExp(`^${region} ${total}$`, 'm'));
    });

    test('every run is within the budget', () => assertWithinBudget(agent));

    test('a network call says that the sandbox has no network', () => {
      const call = agent.call('network');
      assert.equal(call.status, 'error');
      assertSays(call, NO_NETWORK, 'no network');
    });

    test('a missing module says that pip is not available, and what is there', () => {
      const call = agent.call('pandas');
      assert.equal(call.status, 'error');
      assertSays(call, NO_PIP, 'pip is not available');
      assertSays(call, /standard library|installed/i, 'what is installed');
    });
  });

  describe('7 own mistakes', () => {
    let agent: Agent;
    before(async () => {
      agent = await runTask(task(7), bench);
    });

    test('a syntax error shows its line', () => {
      const call = agent.call('syntax');
      assert.equal(call.status, 'error');
      assertSays(call, /SyntaxError/, 'the kind of error');
      assertSays(call, /line 7\b/, 'the line');
    });

    test('the fixed program works', () => {
      const call = agent.call('done');
      assert.equal(call.status, 'ok', show(call));
      assert.match(call.text, /^1 2026-12-01T10:00:00Z/m);
      assert.match(call.text, /^6 \.\.\.$/m);
      assert.match(call.text, /^\d+ 2026-12-01T10:41:39Z/m, 'the last line of the log');
      assert.match(call.text, /size/);
    });

    test('every run is within the budget', () => assertWithinBudget(agent));

    test('an unknown mcp_ name suggests the closest server', () => {
      const call = agent.call('typo');
      assert.equal(call.status, 'error');
      assertSays(call, /\bmcp_filesystem\b/, 'the closest server');
    });

    test('a wrong keyword names itself, the valid one and the signature', () => {
      const call = agent.call('keyword');
      assert.equal(call.status, 'error');
      assertSays(call, /\bfile_path\b/, 'the wrong keyword');
      assertSays(call, /['"`]path['"`]|\bpath=|\bpath:/, 'the valid keyword');
      assertSays(call, /read_text_file\([^)]*\bpath\b/, 'the signature');
    });

    test('a positional argument gets the signature', () => {
      const call = agent.call('positional');
      assert.equal(call.status, 'error');
      assertSays(call, /get_file_info\([^)]*\bpath\b/, 'the signature');
    });

    test('a coroutine used without await says await', () => {
      const call = agent.call('await');
      assert.equal(call.status, 'error');
      assertSays(call, /\bawait\b/, 'await');
    });

    test('tracebacks show no asyncio or runtime frames', () => {
      for (const call of agent.calls.filter((c) => c.status === 'error')) {
        const found = saysIn(call, /asyncio[/\\]|base_events\.py|<mcp\.runtime>|mcp_runtime/);
        assert.ok(!found.text && !found.structured, `${call.label}${show(call)}`);
      }
    });
  });

  describe('8 persistence', () => {
    let agent: Agent;
    before(async () => {
      agent = await runTask(task(8), bench);
    });

    test('state persists across calls of a session', () => {
      assert.equal(agent.call('define').status, 'ok', show(agent.call('define')));
      const call = agent.call('reuse');
      assert.equal(call.status, 'ok', show(call));
      assert.match(call.text, /\('the', 3\), \('dog', 2\)/);
    });

    test('reset starts a fresh interpreter', () => {
      const call = agent.call('reset');
      assert.equal(call.status, 'ok', show(call));
      assert.match(call.text, /False/);
    });

    test('every run is within the budget', () => assertWithinBudget(agent));

    test('a run in a session evicted since its last run says so, with the reason', async () => {
      const back = new Agent(8, bench.bridge, 'analysis');
      await back.run('define', 'kept = 1');
      // maxSessions is 4: four other sessions push "analysis" out.
      for (let i = 1; i <= 4; i++) await new Agent(8, bench.bridge, `other-${i}`).run('other', '1');
      const call = await back.run('after-eviction', 'kept');
      assert.equal(call.status, 'error', show(call));
      assertSays(call, /evict|make room|too many sessions|maxSessions|least recently used/i, 'the session was evicted');
    });
  });

  describe('9 nothing fits', () => {
    let agent: Agent;
    before(async () => {
      agent = await runTask(task(9), bench);
    });

    test('a search no configured server serves returns no hit, and says that nothing fits and which servers there are', () => {
      const call = agent.call('search');
      assert.equal(call.status, 'ok', show(call));
      assert.match(call.text, /^0 hits$/m, `no hit${show(call)}`);
      assertSays(call, NOTHING_FITS, 'nothing fits');
      assertNamesServers(call);
    });

    test('the agent stops: no call after the search searches again', () => assertNoCallAfter(agent, 'search'));

    test('every run is within the budget', () => assertWithinBudget(agent));
  });

  describe('10 resource read', () => {
    let agent: Agent;
    before(async () => {
      agent = await runTask(task(10), bench);
    });

    test("the bridge's instructions name list_resources and read_resource, so the agent need not look for them", () => {
      assert.match(bench.listing.instructions, /list_resources/);
      assert.match(bench.listing.instructions, /read_resource/);
      assert.equal(agent.has('globals'), false, 'no look through globals()');
    });

    test("list_resources names the proxied server's resources with their URIs", () => {
      const call = agent.call('resources');
      assert.equal(call.status, 'ok', show(call));
      assertSays(call, /^fixture:\/\/readme \| readme \| A text resource$/m, 'the readme');
      assertSays(call, /^fixture:\/\/pixel\.png \| pixel/m, 'the binary resource');
    });

    test('read_resource gives the text of the resource', () => {
      const call = agent.call('read');
      assert.equal(call.status, 'ok', show(call));
      assertSays(call, /^text\/plain hello from the fixture resource$/m, 'the resource text');
    });

    test('every run is within the budget', () => assertWithinBudget(agent));
  });

  describe('11 image with packages', () => {
    let agent: Agent;
    before(async () => {
      agent = await runTask(task(11), bench);
    });

    test('what the model reads first (the listing, or capability_summary()) names numpy', async (t) => {
      if (agent.skipped) return t.skip(agent.skipped);
      const packages = await bench.packages();
      assert.ok('listing' in packages);
      if (NAMES_NUMPY.test(packages.listing.description)) return t.diagnostic('the listing names numpy');
      const summary = agent.call('summary');
      assert.equal(summary.status, 'ok', show(summary));
      assertSays(summary, NAMES_NUMPY, 'numpy in capability_summary()');
    });

    test('the agent uses numpy, and gets the fit', (t) => {
      if (agent.skipped) return t.skip(agent.skipped);
      assert.ok(agent.has('numpy'), `calls: ${agent.calls.map((c) => c.label).join(', ')}`);
      const call = agent.call('numpy');
      assert.equal(call.status, 'ok', show(call));
      assert.match(call.text, /^slope 1\.99, intercept 0\.05, std 3\.151$/m);
    });

    test('every run is within the budget', (t) => {
      if (agent.skipped) return t.skip(agent.skipped);
      assertWithinBudget(agent);
    });
  });

  describe('12 file out', () => {
    let agent: Agent;
    before(async () => {
      agent = await runTask(task(12), bench);
    });

    test('the file comes back attached, named by its path', () => {
      const call = agent.call('export');
      assert.equal(call.status, 'ok', show(call));
      assertSays(call, /\/work\/out\/large-sales\.csv\b/, 'the file');
      assert.match(call.text, /\[file \/work\/out\/large-sales\.csv, [\d.]+ KiB: attached\]/);
      const part = call.result.content.find((c) => c.type === 'resource');
      assert.ok(part && part.type === 'resource' && part.resource.uri === 'sandbox:///work/out/large-sales.csv', show(call));
    });

    test('the result says where the user finds the file, so the agent does not paste it', () => {
      assertSays(agent.call('export'), FILE_WHERE, 'where the user finds the file');
      assert.equal(agent.has('paste'), false, 'no paste of the file as text');
    });

    test('every run is within the budget', () => assertWithinBudget(agent));
  });

  describe('13 timeout keeps state', () => {
    let agent: Agent;
    before(async () => {
      agent = await runTask(task(13), bench);
    });

    test('a run past its timeout is stopped, and says that the variables are kept', () => {
      const call = agent.call('slow');
      assert.equal(call.status, 'timeout', show(call));
      assertSays(call, /did not finish within 3 s/, 'the timeout');
      assertSays(call, STATE_KEPT, 'the state is kept');
    });

    test('the next run uses the variables from before, with no check first', () => {
      assert.equal(agent.has('check'), false, 'no check of globals()');
      const call = agent.call('resume');
      assert.equal(agent.calls.indexOf(call), agent.calls.indexOf(agent.call('slow')) + 1);
      assert.equal(call.status, 'ok', show(call));
      const distinct = Number(/^(\d+) distinct words$/m.exec(agent.call('load').text)?.[1]);
      const scored = /^scored (\d+) of (\d+) words before the timeout$/m.exec(call.text);
      assert.ok(scored, show(call));
      assert.equal(Number(scored[2]), distinct);
      assert.ok(Number(scored[1]) >= 1 && Number(scored[1]) < distinct, `scored ${scored[1]}`);
    });

    test('every run is within the budget', () => assertWithinBudget(agent));
  });

  describe('14 weak hits', () => {
    let agent: Agent;
    before(async () => {
      agent = await runTask(task(14), bench);
    });

    test('a search whose hits all score low says they may not do it, naming the servers', () => {
      const call = agent.call('search');
      assert.equal(call.status, 'ok', show(call));
      const scores = [...call.text.matchAll(/^\w+ \w+ ([\d.]+) /gm)].map((m) => Number(m[1]));
      assert.ok(scores.length > 0 && scores.every((score) => score < WEAK_SCORE), `weak hits${show(call)}`);
      assertSays(call, WEAK_HITS, 'the hits are weak');
      assertNamesServers(call);
    });

    test('the agent stops: no call after the search', () => assertNoCallAfter(agent, 'search'));

    test('every run is within the budget', () => assertWithinBudget(agent));
  });
});

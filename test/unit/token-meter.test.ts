// The token meter: the estimate of tokens against o200k itself, the figures the bridge makes of a
// run (what the model got, what stayed in the sandbox, what a direct listing would cost), the
// tool calls that feed them, their place in the run log's run record, and how the views say
// them and add them up per session.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { encode } from 'gpt-tokenizer';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ProxyHub } from '../../src/bridge/proxy/hub.ts';
import { createHostMethods } from '../../src/bridge/sandbox-api/host-methods.ts';
import { listingText, runMeter } from '../../src/bridge/results/meter.ts';
import { estimateTokens, TOKEN_ESTIMATE } from '../../src/shared/token-estimate.ts';
import { RunLog } from '../../src/state/run-log/writer.ts';
import { parseRunLog, type RunMeter, type RunRecord } from '../../src/state/run-log/reader.ts';
import { meterLine, meterTotals, totalsLine, totalsShort, METER_METHOD } from '../../src/extension/views/meter-text.ts';
import { runResult } from '../helpers/run-result.ts';
import { requestContext } from '../helpers/request-context.ts';

interface Listed {
  name: string;
  description?: string;
  inputSchema: unknown;
}

const lists = JSON.parse(readFileSync('test/fixtures/tool-lists.json', 'utf8')) as { servers: Record<string, { tools: Listed[] }> };
const listings = Object.values(lists.servers).flatMap((s) =>
  s.tools.map((t) => listingText({ tool: t.name, description: t.description ?? '', inputSchema: t.inputSchema })),
);
const outputs = [
  Array.from({ length: 200 }, (_, i) => `line ${i}`).join('\n'),
  'first line\nsays "hi"\nOut: 42',
  'Traceback (most recent call last):\n  File "<cell>", line 3, in <module>\nToolError: server "memory" has no tool "foo"; its tools: create_entities, create_relations\n[2 tool calls]',
  "Out: [{'name': 'Ada', 'entityType': 'person', 'observations': ['first programmer']}, {'name': 'Bob', 'entityType': 'person'}]",
  "Out: {'total': 1234.56, 'rows': 48, 'mean': 25.72, 'top': ['alpha', 'beta', 'gamma']}",
  JSON.stringify(
    Array.from({ length: 30 }, (_, i) => ({ id: i, name: `item-${i}`, price: i * 3.17 })),
    null,
    2,
  ),
];
const docs = readdirSync('docs')
  .filter((f) => f.endsWith('.md'))
  .map((f) => readFileSync(join('docs', f), 'utf8'));
const python = readdirSync('src/sandbox/container/kernel')
  .filter((f) => f.endsWith('.py'))
  .map((f) => readFileSync(join('src/sandbox/container/kernel', f), 'utf8'));

test('the estimate stays within about 10% of o200k on tool listings, program output, prose and code', () => {
  for (const [kind, texts, each] of [
    ['tool listings', listings, 0.15],
    ['program output', outputs, 0.1],
    ['docs', docs, 0.1],
    ['Python', python, 0.1],
  ] as const) {
    let estimated = 0;
    let counted = 0;
    for (const text of texts) {
      const real = encode(text).length;
      const guess = estimateTokens(text);
      estimated += guess;
      counted += real;
      assert.ok(Math.abs(guess / real - 1) <= each, `${kind}: ${guess} estimated for ${real} tokens: ${text.slice(0, 80)}`);
    }
    assert.ok(Math.abs(estimated / counted - 1) <= 0.06, `${kind}: ${estimated} estimated for ${counted} tokens in all`);
  }
  assert.equal(estimateTokens(''), 0);
  assert.equal(estimateTokens('hello'), 1);
});

const reply = (text: string): CallToolResult => ({
  content: [
    { type: 'text', text },
    { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
  ],
});

test("a run's meter: the text the model got, the tool results that stayed in the sandbox, the listing of the tools used", () => {
  const usage = {
    resultBytes: 50_000,
    listings: new Map([
      ['a', 120],
      ['b', 80],
    ]),
  };
  const meter = runMeter(reply('Out: 42'), usage);
  assert.deepEqual(meter, {
    modelChars: 7,
    modelTokens: estimateTokens('Out: 42'),
    toolResultBytes: 50_000,
    keptBytes: 50_000 - 7,
    toolsUsed: 2,
    listingTokens: 200,
    tokenizer: TOKEN_ESTIMATE,
  });
  // Counted from below: never less than nothing, and a text of several bytes per character counts its bytes.
  assert.equal(runMeter(reply('é'.repeat(40)), { resultBytes: 60, listings: new Map() }).keptBytes, 0);
  assert.equal(runMeter(reply('x'), { resultBytes: 0, listings: new Map() }).keptBytes, 0);
});

const context = requestContext;

test("a run's tool calls give the meter the bytes the code received and each tool's listing once", async () => {
  const tools = {
    big: { tool: 'big', description: 'Returns a large document', inputSchema: { type: 'object', properties: { id: { type: 'string' } } } },
    small: { tool: 'small', description: 'Returns a word', inputSchema: { type: 'object' } },
  };
  const results: Record<string, CallToolResult> = {
    big: { content: [{ type: 'text', text: 'x'.repeat(10_000) }] },
    small: { content: [], structuredContent: { word: 'hi' } },
  };
  const hub = {
    callTool: async (server: string, tool: string) => ({ server, tool, result: results[tool]! }),
    catalog: { findTool: (_server: string, tool: string) => tools[tool as keyof typeof tools], noteResult: () => undefined },
  } as unknown as ProxyHub;
  const methods = createHostMethods(hub, undefined);
  const run = methods.forRun();
  for (const tool of ['big', 'big', 'small']) await run.handle('call_tool', { server: 'docs', tool }, context('r'));
  // A request of no run's result counts nowhere.
  await methods.handle('call_tool', { server: 'docs', tool: 'big' }, context('r'));
  const usage = run.usage();
  const bytes = (converted: unknown) => Buffer.byteLength(JSON.stringify(converted));
  assert.equal(
    usage.resultBytes,
    2 * bytes({ isError: false, value: 'x'.repeat(10_000) }) + bytes({ isError: false, value: { word: 'hi' } }),
  );
  assert.equal(usage.listings.size, 2);
  assert.equal(
    [...usage.listings.values()].reduce((a, b) => a + b, 0),
    estimateTokens(listingText(tools.big)) + estimateTokens(listingText(tools.small)),
  );
  assert.equal(methods.forRun().usage().resultBytes, 0, 'another run starts from nothing');
});

const METER: RunMeter = {
  modelChars: 1234,
  modelTokens: 310,
  toolResultBytes: 46_080,
  keptBytes: 44_846,
  toolsUsed: 2,
  listingTokens: 420,
  tokenizer: TOKEN_ESTIMATE,
};

test("the run log keeps the meter in the run's record; a record without one, or with one it cannot read, still reads", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-meter-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const log = new RunLog(dir);
  log.runStarted({ run: 'm', session: 'default', code: 'x', timeoutMs: 1000 });
  log.runEnded(runResult({ runId: 'm' }), { toolCalls: 2, meter: METER });
  log.runStarted({ run: 'old', session: 'default', code: 'y', timeoutMs: 1000 });
  log.runEnded(runResult({ runId: 'old' }), { toolCalls: 0 });
  log.close();
  const text = readFileSync(join(dir, 'runs.jsonl'), 'utf8');
  const forged = text.replace(/"run":"old"/g, '"run":"bad"').replace('"toolCalls":0', '"toolCalls":0,"meter":{"modelChars":"many"}');
  const runs = parseRunLog(text + forged);
  assert.deepEqual(runs.find((r) => r.id === 'm')!.meter, METER);
  assert.equal(runs.find((r) => r.id === 'old')!.meter, undefined);
  const bad = runs.find((r) => r.id === 'bad')!;
  assert.equal(bad.status, 'ok', 'the run with a meter it cannot read still ended');
  assert.equal(bad.meter, undefined);
});

function record(id: string, session: string, started: string, meter?: RunMeter, owner?: string): RunRecord {
  return parseRunLog(
    [
      JSON.stringify({ type: 'run-start', time: started, run: id, session, code: 'x', timeoutMs: 1000, ...(owner ? { owner } : {}) }),
      JSON.stringify({ type: 'run-end', time: started, run: id, session, status: 'ok', ...(meter ? { meter } : {}) }),
    ].join('\n'),
  )[0]!;
}

test('the views say the meter in words, and add it up per session since the window started', () => {
  assert.equal(
    meterLine(METER),
    'the model got 1,234 characters ≈ 310 tokens · 44 KiB of 45 KiB of tool results stayed in the sandbox · a direct listing of the 2 tools used ≈ 420 tokens',
  );
  assert.equal(
    meterLine({ ...METER, toolResultBytes: 0, keptBytes: 0, toolsUsed: 0, listingTokens: 0, modelChars: 1, modelTokens: 1 }),
    'the model got 1 character ≈ 1 token · no tool results · no tools called',
  );
  assert.match(METER_METHOD, /estimated.*o200k/);
  const runs = [
    record('before', 'default', '2026-01-01T09:00:00.000Z', METER),
    record('a', 'default', '2026-01-01T10:00:00.000Z', METER),
    record('b', 'work', '2026-01-01T10:01:00.000Z', { ...METER, toolsUsed: 1, listingTokens: 100 }),
    record('c', 'default', '2026-01-01T10:02:00.000Z', METER),
    record('unmetered', 'default', '2026-01-01T10:03:00.000Z'),
  ];
  const { all, sessions } = meterTotals(runs, '2026-01-01T10:00:00.000Z');
  assert.equal(all.runs, 3);
  assert.equal(all.modelTokens, 930);
  assert.equal(all.listingTokens, 940);
  assert.deepEqual(
    sessions.map(([name, totals]) => [name, totals.runs, totals.keptBytes]),
    [
      ['default', 2, 2 * 44_846],
      ['work', 1, 44_846],
    ],
  );
  assert.equal(
    totalsLine(sessions[0]![1]),
    '2 runs · the model got 2,468 characters ≈ 620 tokens · 88 KiB of 90 KiB of tool results stayed in the sandbox · direct listings of the tools used ≈ 840 tokens',
  );
  assert.equal(totalsShort(all), '3 runs · model ≈ 930 tokens · 131 KiB stayed · listing ≈ 940 tokens');
});

test("a window's totals count its own bridge's runs, not another window's sharing the state dir", () => {
  const runs = [
    record('mine', 'default', '2026-01-01T10:00:00.000Z', METER, 'window-a'),
    record('theirs', 'default', '2026-01-01T10:01:00.000Z', METER, 'window-b'),
    record('cli', 'default', '2026-01-01T10:02:00.000Z', METER),
  ];
  assert.equal(runs[0]!.owner, 'window-a');
  assert.equal(meterTotals(runs, '2026-01-01T09:00:00.000Z', 'window-a').all.runs, 1);
  assert.equal(meterTotals(runs, '2026-01-01T09:00:00.000Z').all.runs, 3);
});

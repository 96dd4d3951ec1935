// What calls taught of tools' returns, kept in the state dir (learned-returns.json): a second
// catalog on the same folder reads it back, a changed schema drops it, a corrupt file is
// ignored with its reason logged, and the file stays bounded and private.
import assert from 'node:assert/strict';
import { rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ToolCatalog } from '../../src/bridge/catalog/catalog.ts';
import { CONTENT_TYPE } from '../../src/bridge/catalog/signature.ts';
import {
  LEARNED_RETURNS_FILE,
  MAX_LEARNED_TOOLS,
  readLearnedReturns,
  saveLearnedReturns,
  toolSchemaHash,
  type LearnedReturn,
} from '../../src/state/learned-returns-file.ts';

const made: string[] = [];
after(() => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));
const temp = async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-learned-'));
  made.push(dir);
  return dir;
};

const ECHO = { name: 'echo', inputSchema: { type: 'object', properties: { message: { type: 'string' } } } };
const TOOLS = [ECHO, { name: 'image' }];

/** A catalog of one server on `dir`, loaded as a bridge's is at its start; `logged` gets what it logs. */
async function catalogOn(dir: string, logged: string[] = []): Promise<ToolCatalog> {
  const catalog = new ToolCatalog([{ name: 'fixture', fingerprint: 'f' }], dir, (m) => logged.push(m));
  await catalog.load();
  return catalog;
}

test('what calls returned is written to the state dir and a second catalog there reads it back before any call', async () => {
  const dir = await temp();
  const first = await catalogOn(dir);
  first.setTools('fixture', TOOLS);
  first.noteResult('fixture', 'echo', true);
  first.noteResult('fixture', 'image', false);
  await first.flush();
  if (process.platform !== 'win32') assert.equal(statSync(join(dir, LEARNED_RETURNS_FILE)).mode & 0o777, 0o600);
  const { entries, problem } = await readLearnedReturns(dir);
  assert.equal(problem, undefined);
  assert.deepEqual(
    entries.map(({ server, tool, seen }) => ({ server, tool, seen })).sort((a, b) => a.tool.localeCompare(b.tool)),
    [
      { server: 'fixture', tool: 'echo', seen: 'text' },
      { server: 'fixture', tool: 'image', seen: 'content' },
    ],
  );
  // From the cached tool list, before the server lists or any call returns.
  const second = await catalogOn(dir);
  assert.equal(second.findTool('fixture', 'echo')?.signature, 'echo(*, message: str = None) -> str');
  assert.equal(second.findTool('fixture', 'image')?.returnType, CONTENT_TYPE);
  // And when the server lists the same tools again.
  second.setTools('fixture', TOOLS);
  assert.equal(second.findTool('fixture', 'echo')?.returnType, 'str');
  // Other content later makes it content for good, in the file too.
  second.noteResult('fixture', 'echo', false);
  await second.flush();
  const third = await catalogOn(dir);
  third.setTools('fixture', TOOLS);
  assert.equal(third.findTool('fixture', 'echo')?.returnType, CONTENT_TYPE);
});

test('a tool whose schema changed since its calls were seen says what MCP returns in general', async () => {
  const dir = await temp();
  const first = await catalogOn(dir);
  first.setTools('fixture', TOOLS);
  first.noteResult('fixture', 'echo', true);
  await first.flush();
  const second = await catalogOn(dir);
  const changed = { ...ECHO, inputSchema: { type: 'object', properties: { text: { type: 'string' } } } };
  second.setTools('fixture', [changed, { name: 'image' }]);
  assert.equal(second.findTool('fixture', 'echo')?.returnType, CONTENT_TYPE);
  // In the bridge that learned it, too: a relisting with a new schema starts afresh.
  first.setTools('fixture', [changed]);
  assert.equal(first.findTool('fixture', 'echo')?.returnType, CONTENT_TYPE);
  first.noteResult('fixture', 'echo', true);
  assert.equal(first.findTool('fixture', 'echo')?.returnType, 'str');
  // An output schema says what a call returns, whatever was learned.
  const withOutput = { ...ECHO, outputSchema: { type: 'object', properties: { n: { type: 'integer' } } } };
  first.setTools('fixture', [withOutput]);
  assert.equal(first.findTool('fixture', 'echo')?.returnType, '{n?: int}');
  assert.equal(toolSchemaHash(ECHO.inputSchema, undefined), toolSchemaHash(ECHO.inputSchema, undefined));
  assert.notEqual(toolSchemaHash(ECHO.inputSchema, undefined), toolSchemaHash(changed.inputSchema, undefined));
});

test('a corrupt or foreign file is ignored with its reason logged, and rewritten by the next call', async () => {
  for (const [content, reason] of [
    ['{"version": 1, "tools": [', /not JSON/],
    [
      JSON.stringify({ version: 1, tools: [{ server: 'fixture', tool: 'echo', schema: 'x', seen: 'text', learnedAt: 1 }] }),
      /not in the expected form: tools\.0\.schema/,
    ],
    [JSON.stringify({ version: 9, tools: [] }), /not in the expected form: version/],
  ] as const) {
    const dir = await temp();
    writeFileSync(join(dir, LEARNED_RETURNS_FILE), content, { mode: 0o600 });
    const logged: string[] = [];
    const catalog = await catalogOn(dir, logged);
    assert.equal(logged.length, 1, logged.join('\n'));
    assert.match(logged[0]!, new RegExp(`${LEARNED_RETURNS_FILE} ignored \\(${reason.source}`));
    catalog.setTools('fixture', TOOLS);
    assert.equal(catalog.findTool('fixture', 'echo')?.returnType, CONTENT_TYPE);
    catalog.noteResult('fixture', 'echo', true);
    await catalog.flush();
    const reread = await readLearnedReturns(dir);
    assert.equal(reread.problem, undefined);
    assert.deepEqual(
      reread.entries.map((e) => e.tool),
      ['echo'],
    );
  }
});

test('the file keeps the most recently learned tools up to its cap, other writers included, and no overlong names', async () => {
  const dir = await temp();
  const entry = (i: number, over: Partial<LearnedReturn> = {}): LearnedReturn => ({
    server: 's',
    tool: `t${i}`,
    schema: toolSchemaHash({ i }, undefined),
    seen: 'text',
    learnedAt: i,
    ...over,
  });
  await saveLearnedReturns(dir, [entry(0, { server: 'other' })]);
  await saveLearnedReturns(
    dir,
    Array.from({ length: MAX_LEARNED_TOOLS + 4 }, (_, i) => entry(i + 1)),
  );
  let { entries } = await readLearnedReturns(dir);
  assert.equal(entries.length, MAX_LEARNED_TOOLS);
  assert.equal(entries[0]!.tool, `t${MAX_LEARNED_TOOLS + 4}`);
  assert.ok(!entries.some((e) => e.server === 'other' || e.tool === 't4'), 'the oldest went first');
  // Another writer's entry is kept beside this one's; names over the caps are left out.
  await saveLearnedReturns(dir, [entry(1e13, { server: 'another' }), entry(1e13 + 1, { tool: 'x'.repeat(257) })]);
  ({ entries } = await readLearnedReturns(dir));
  assert.equal(entries.length, MAX_LEARNED_TOOLS);
  assert.equal(entries[0]!.server, 'another');
  assert.ok(!entries.some((e) => e.tool.length > 256));
  assert.ok((await readFile(join(dir, LEARNED_RETURNS_FILE), 'utf8')).length < 400 * MAX_LEARNED_TOOLS);
});

// The caps of the host methods the sandbox calls: the images kept per run from tool results
// (to recognise one the code returns), also with calls running at once, and the tool names
// discovered_servers() lists per server, the rest counted in a tail.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ProxyHub } from '../../src/bridge/proxy/hub.ts';
import { createHostMethods, MAX_LISTED_TOOL_NAMES, MAX_TOOL_IMAGES_PER_RUN } from '../../src/bridge/sandbox-api/host-methods.ts';
import { requestContext } from '../helpers/request-context.ts';

const context = requestContext;

/** A distinct small PNG-looking image each time (base64 of distinct bytes). */
let serial = 0;
const picture = () => ({
  type: 'image' as const,
  mimeType: 'image/png',
  data: Buffer.from(`\x89PNG image ${serial++}`).toString('base64'),
});

function imageHub(perCall: number): ProxyHub {
  const hub = {
    callTool: async (server: string, tool: string) => {
      await new Promise((resolve) => setImmediate(resolve));
      return { server, tool, result: { content: Array.from({ length: perCall }, picture) } };
    },
    // The token meter looks the tool up for its listing (this one has none); what calls return is noted for signatures.
    catalog: { findTool: () => undefined, noteResult: () => undefined },
  };
  return hub as unknown as ProxyHub;
}

test('a run keeps at most MAX_TOOL_IMAGES_PER_RUN tool images, one call or many at once; each run its own', async () => {
  const one = createHostMethods(imageHub(MAX_TOOL_IMAGES_PER_RUN + 10), undefined).forRun();
  await one.handle('call_tool', { server: 's', tool: 'shots' }, context('a'));
  assert.equal(one.toolImages().length, MAX_TOOL_IMAGES_PER_RUN);
  assert.equal(one.toolCalls(), 1);

  const methods = createHostMethods(imageHub(10), undefined);
  const many = methods.forRun();
  await Promise.all(Array.from({ length: 12 }, () => many.handle('call_tool', { server: 's', tool: 'shots' }, context('b'))));
  assert.equal(many.toolImages().length, MAX_TOOL_IMAGES_PER_RUN, '120 images from 12 concurrent calls');
  assert.equal(many.toolCalls(), 12);
  // Another run has its own count, and requests of no run's result keep nothing.
  const other = methods.forRun();
  await other.handle('call_tool', { server: 's', tool: 'shots' }, context('c'));
  assert.equal(other.toolImages().length, 10);
  await methods.handle('call_tool', { server: 's', tool: 'shots' }, context('d'));
  assert.equal(other.toolCalls(), 1);
  assert.equal(many.toolImages().length, MAX_TOOL_IMAGES_PER_RUN);
});

test('discovered_servers() names at most MAX_LISTED_TOOL_NAMES tools per server and counts the rest', async () => {
  const tools = (n: number) => Array.from({ length: n }, (_, i) => ({ alias: `tool_${i}` }));
  const records = [
    { name: 'big', alias: 'big', description: 'many tools', tools: tools(MAX_LISTED_TOOL_NAMES + 25), state: 'ready' },
    { name: 'exact', alias: 'exact', description: '', tools: tools(MAX_LISTED_TOOL_NAMES), state: 'ready' },
  ];
  const hub = { discover: async () => [], catalog: { records: () => records }, consentState: () => 'allowed' } as unknown as ProxyHub;
  const methods = createHostMethods(hub, undefined);
  const listed = (await methods.handle('list_servers', {}, context('d'))) as Array<{ name: string; tools: number; toolNames: string[] }>;
  const big = listed.find((s) => s.name === 'big')!;
  assert.equal(big.tools, MAX_LISTED_TOOL_NAMES + 25);
  assert.equal(big.toolNames.length, MAX_LISTED_TOOL_NAMES + 1);
  assert.equal(big.toolNames[MAX_LISTED_TOOL_NAMES - 1], `tool_${MAX_LISTED_TOOL_NAMES - 1}`);
  assert.equal(big.toolNames.at(-1), '... 25 more: search_tool_docs()');
  const exact = listed.find((s) => s.name === 'exact')!;
  assert.equal(exact.toolNames.length, MAX_LISTED_TOOL_NAMES, 'no tail when every name is shown');
  assert.ok(!exact.toolNames.some((n) => n.startsWith('...')));
});

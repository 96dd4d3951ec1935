// tools/list_changed for the bridge's own listing, with the SDK's server and client over an
// in-memory pair and a driven clock: nothing before initialize, one notice per burst, none when
// the listing a client would get is the one it had (a no-op update, a change undone in the burst).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { LISTING_NOTICE_MS, ListedMcpServer, listedText, ListingNotice } from '../../src/bridge/tool/listing-notice.ts';
import { FakeClock } from '../helpers/fake-clock.ts';

async function harness() {
  const clock = new FakeClock();
  const server = new ListedMcpServer({ name: 'listing', version: '1' });
  const tool = server.registerTool('run_python', { description: 'first', inputSchema: { code: z.string() } }, () => ({ content: [] }));
  const notice = new ListingNotice({ render: () => listedText('run_python', tool), send: () => server.sendToolListChangedNow(), clock });
  server.notice = notice;
  server.server.oninitialized = () => notice.initialized();
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'listing-test', version: '1' });
  let notices = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void notices++);
  await server.connect(serverSide);
  // Connected but not initialized: an update tells nobody.
  tool.update({ description: 'before initialize' });
  clock.advance(LISTING_NOTICE_MS * 4);
  await client.connect(clientSide);
  // The initialized notification reaches the server.
  await client.ping();
  const settle = async () => {
    clock.advance(LISTING_NOTICE_MS);
    await client.ping();
  };
  return { clock, tool, client, notices: () => notices, settle, description: async () => (await client.listTools()).tools[0]?.description };
}

test('nothing is sent before initialize, and the listing the client first gets is the current one', async () => {
  const h = await harness();
  await h.settle();
  assert.equal(h.notices(), 0);
  assert.equal(await h.description(), 'before initialize');
});

test('a burst of changes sends one notice, after it, and tools/list then gives the new listing', async () => {
  const h = await harness();
  h.tool.update({ description: 'second' });
  h.clock.advance(LISTING_NOTICE_MS / 2);
  h.tool.update({ description: 'third' });
  await h.client.ping();
  assert.equal(h.notices(), 0, 'not while the burst goes on');
  await h.settle();
  assert.equal(h.notices(), 1);
  assert.equal(await h.description(), 'third');
});

test('an update that leaves the listing as it was, or a change undone within the burst, sends nothing', async () => {
  const h = await harness();
  h.tool.update({ description: 'before initialize' });
  await h.settle();
  assert.equal(h.notices(), 0, 'the same text');
  h.tool.update({ description: 'changed' });
  h.tool.update({ description: 'before initialize' });
  await h.settle();
  assert.equal(h.notices(), 0, 'undone within the burst');
  h.tool.update({ description: 'changed' });
  await h.settle();
  h.tool.update({ description: 'changed' });
  await h.settle();
  assert.equal(h.notices(), 1, 'told once, and not again for the same listing');
});

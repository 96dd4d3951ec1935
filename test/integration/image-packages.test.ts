// An image's own Python packages reach the listing: the real bridge on real Podman and real
// Docker learns them from the first container of the image (its kernel's `ready` frame), says
// "with packages" and tells the client once (tools/list_changed), and the capabilities resource
// names them. An image with the standard library only keeps its listing and sends nothing. The
// next bridge of the same state dir starts with what was learned. The kernel's scan holds its
// caps on a real container.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startBridge, structured, textOf, type BridgeHandle } from '../helpers/bridge.ts';
import { TEST_DATA_IMAGE, TEST_IMAGE, testRuntimes } from '../helpers/env.ts';

async function description(bridge: BridgeHandle): Promise<string> {
  return (await bridge.client.listTools()).tools[0]!.description ?? '';
}

async function capabilities(bridge: BridgeHandle): Promise<string> {
  const resource = await bridge.client.readResource({ uri: 'code-execution-mode://capabilities' });
  return resource.contents.map((c) => ('text' in c ? c.text : '')).join('');
}

/** Counts tools/list_changed from now on. */
function countListChanged(bridge: BridgeHandle): () => number {
  let count = 0;
  bridge.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void count++);
  return () => count;
}

/** Every notification the bridge sent so far has reached the client's handlers. */
async function settle(bridge: BridgeHandle): Promise<void> {
  // Notifications are sent before the result they go with, and the client handles messages in
  // order: once a later answer is back, the ones before it have been counted.
  await bridge.client.ping();
}

for (const runtime of testRuntimes()) {
  describe(`an image's own packages on ${runtime}`, () => {
    test('an image with numpy and matplotlib: "with packages" after the first container, one list_changed, the resource names them', async () => {
      const bridge = await startBridge({ sandbox: { runtime, image: TEST_DATA_IMAGE, prewarm: false, memory: '256m', maxSessions: 4 } });
      try {
        const listChanged = countListChanged(bridge);
        assert.match(await description(bridge), /^Python 3 sandbox, standard library only/, 'nothing is known before a container started');
        const run = await bridge.call('import numpy, matplotlib\nprint(numpy.__name__, matplotlib.__name__)');
        assert.equal(structured(run).status, 'ok', textOf(run));
        await settle(bridge);
        assert.equal(listChanged(), 1, 'tools/list_changed was sent once');
        assert.match(await description(bridge), /^Python 3 sandbox, with packages \(no pip, no network\)/);
        const text = await capabilities(bridge);
        const line = /Python distributions in the sandbox image[^\n]*/.exec(text)?.[0] ?? '';
        assert.match(line, /\bnumpy\b/);
        assert.match(line, /\bmatplotlib\b/);
        assert.doesNotMatch(line, /\bpip\b,|\bsetuptools\b,|\bwheel\b/, 'packaging tools are left out');
        // More containers of the same image, started at once, change nothing: learned once per image.
        const more = await Promise.all(['a', 'b', 'c'].map((session) => bridge.call('print(1)', { session })));
        for (const result of more) assert.equal(structured(result).status, 'ok', textOf(result));
        await settle(bridge);
        assert.equal(listChanged(), 1, 'no further tools/list_changed');
      } finally {
        await bridge.close();
      }
    });

    test('an image with the standard library only keeps "standard library only" and sends no list_changed', async () => {
      const bridge = await startBridge({ sandbox: { runtime, image: TEST_IMAGE, memory: '256m' } });
      try {
        const listChanged = countListChanged(bridge);
        const run = await bridge.call('print(2 + 2)');
        assert.equal(structured(run).status, 'ok', textOf(run));
        await bridge.call('print(3)', { session: 'other' });
        await settle(bridge);
        assert.equal(listChanged(), 0);
        assert.match(await description(bridge), /^Python 3 sandbox, standard library only/);
        assert.doesNotMatch(await capabilities(bridge), /distributions in the sandbox image/);
      } finally {
        await bridge.close();
      }
    });

    test('the next bridge of the state dir says "with packages" from its start; a wrong memory is corrected by the first container', async () => {
      const first = await startBridge({ sandbox: { runtime, image: TEST_DATA_IMAGE, prewarm: false, memory: '256m' } });
      const stateDir = first.stateDir;
      try {
        assert.equal(structured(await first.call('print(1)')).status, 'ok');
      } finally {
        await first.close();
      }
      const file = join(stateDir, 'image-packages.json');
      const remembered = JSON.parse(await readFile(file, 'utf8')) as { images: Record<string, { names: string[] }> };
      assert.ok(remembered.images[TEST_DATA_IMAGE]?.names.includes('numpy'), "the image's packages are remembered");
      const second = await startBridge({ stateDir, sandbox: { runtime, image: TEST_DATA_IMAGE, prewarm: false, memory: '256m' } });
      try {
        const listChanged = countListChanged(second);
        assert.match(await description(second), /^Python 3 sandbox, with packages/, 'before any container');
        assert.match(await capabilities(second), /distributions in the sandbox image[^\n]*\bnumpy\b/);
        assert.equal(structured(await second.call('print(1)')).status, 'ok');
        await settle(second);
        assert.equal(listChanged(), 0, 'the listing was right: nothing to tell');
      } finally {
        await second.close();
      }
      // A memory that is wrong (the image was replaced by one without packages) lasts until the first container.
      remembered.images[TEST_IMAGE] = { ...remembered.images[TEST_DATA_IMAGE]!, names: ['numpy'] };
      await writeFile(file, JSON.stringify(remembered));
      const third = await startBridge({ stateDir, sandbox: { runtime, image: TEST_IMAGE, prewarm: false, memory: '256m' } });
      try {
        const listChanged = countListChanged(third);
        assert.match(await description(third), /^Python 3 sandbox, with packages/);
        assert.equal(structured(await third.call('print(1)')).status, 'ok');
        await settle(third);
        assert.equal(listChanged(), 1);
        assert.match(await description(third), /^Python 3 sandbox, standard library only/);
        assert.doesNotMatch(await capabilities(third), /distributions in the sandbox image/);
      } finally {
        await third.close();
      }
    });

    test("the kernel's scan sends at most its caps and counts what it leaves out", async () => {
      const bridge = await startBridge({ sandbox: { runtime, image: TEST_IMAGE, memory: '256m', prewarm: false } });
      try {
        // The kernel's own function, on a folder made to exceed its caps: 520 names and one too long.
        const code = [
          'import os, sys',
          'root = "/tmp/site"',
          'os.makedirs(root)',
          'for i in range(520): os.mkdir(f"{root}/pkg{i:04d}-1.0.dist-info")',
          'os.mkdir(root + "/" + "x" * 101 + "-1.0.egg-info")',
          'open(root + "/a.b-5.0.egg-info", "w").close()  # a file, as Debian ships some',
          'os.mkdir(root + "/not-a-dist")',
          'names, more = sys.modules["__main__"]._image_distributions([root])',
          'print(len(names), more, names[0], names[-1])',
          // The entries looked at: the scan stops at its cap (here 100 of the 523).
          'names, more = sys.modules["__main__"]._image_distributions([root], max_entries=100)',
          'print("entries", len(names) <= 100, len(names) >= 95)',
          // The folders looked at: 70 folders of one distribution each, 64 looked at.
          'for i in range(70): os.makedirs(f"/tmp/p{i}/d{i:02d}-1.dist-info")',
          'names, more = sys.modules["__main__"]._image_distributions([f"/tmp/p{i}" for i in range(70)])',
          'print("folders", len(names), more)',
        ].join('\n');
        const run = await bridge.call(code);
        assert.equal(structured(run).status, 'ok', textOf(run));
        assert.match(textOf(run), /500 22 a.b pkg0498/);
        assert.match(textOf(run), /entries True True/);
        assert.match(textOf(run), /folders 64 0/);
      } finally {
        await bridge.close();
      }
    });
  });
}

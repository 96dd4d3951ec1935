// An image's own Python packages, told alike everywhere: a fresh bridge on real Podman and real
// Docker settles what the image has before its first listing (the sandbox's first container
// says; the first run then uses that container), and the listing, the capabilities resource,
// capability_summary() and the hint of an import that failed say the same: the notable
// distributions first, then a count. An image with the standard library only says so everywhere.
// The next bridge of the same state dir finds what was learned by the image's ID; a wrong
// memory is corrected by the first container. The kernel's scan holds its caps on a real container.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startBridge, structured, textOf, type BridgeHandle } from '../helpers/bridge.ts';
import { TEST_DATA_IMAGE, TEST_IMAGE, testRuntimes } from '../helpers/env.ts';
import { until } from '../helpers/wait.ts';

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

/** The sentence of what is installed, as a text says it. */
function installedIn(text: string): string {
  return (
    /(Installed besides the standard library: [^\n]*?\.|Only the Python standard library is installed\.)(?= |\n|$)/.exec(text)?.[1] ?? ''
  );
}

/** What the code is told: capability_summary(), and the errors of a missing module and a missing network library. */
async function toldInside(bridge: BridgeHandle): Promise<{ summary: string; missing: string; network: string; present: string }> {
  const summary = await bridge.call('from mcp import runtime\nprint(runtime.capability_summary())');
  assert.equal(structured(summary).status, 'ok', textOf(summary));
  const missing = await bridge.call('import a_module_nobody_has');
  const network = await bridge.call('import requests');
  // A network library that is there fails at its first request: the same way out is named.
  const present = await bridge.call(
    [
      'import os, sys',
      'os.makedirs("/tmp/netlib", exist_ok=True)',
      'open("/tmp/netlib/fetcher.py", "w").write("import urllib.request\\ndef get(url):\\n    return urllib.request.urlopen(url, timeout=5)\\n")',
      'sys.path.insert(0, "/tmp/netlib")',
      'import fetcher',
      'fetcher.get("http://example.com/")',
    ].join('\n'),
  );
  return { summary: String(structured(summary).stdout), missing: textOf(missing), network: textOf(network), present: textOf(present) };
}

function imageId(runtime: string, image: string): string {
  return execFileSync(runtime, ['image', 'inspect', '--format', '{{.Id}}', image], { encoding: 'utf8' }).trim();
}

for (const runtime of testRuntimes()) {
  describe(`an image's own packages on ${runtime}`, () => {
    for (const prewarm of [true, false]) {
      test(`a fresh bridge${prewarm ? '' : ' without a spare'}: the first listing names numpy, matplotlib and scipy; the resource, capability_summary() and import errors say the same`, async () => {
        const bridge = await startBridge({ sandbox: { runtime, image: TEST_DATA_IMAGE, prewarm, memory: '256m', maxSessions: 4 } });
        try {
          const listChanged = countListChanged(bridge);
          // Before any run: the bridge waited for its first container to say what the image has.
          assert.match(
            await description(bridge),
            /^Python 3 sandbox, with packages numpy, matplotlib, scipy and \d+ more \(no pip, no network\)/,
          );
          const resource = await capabilities(bridge);
          const sentence = installedIn(resource);
          assert.match(
            sentence,
            /^Installed besides the standard library: numpy, matplotlib, scipy, sympy, Pillow, lxml, [^.]* and \d+ more\.$/,
          );
          assert.doesNotMatch(sentence, /\bpip\b|\bsetuptools\b|\bwheel\b/, 'packaging tools are left out');
          const told = await toldInside(bridge);
          assert.equal(installedIn(told.summary), sentence, 'capability_summary() says what the resource says');
          assert.match(told.summary, /^No network\. /m, 'without sandbox.network the code is told it has none');
          assert.equal(installedIn(told.missing), sentence, 'so does the error of a missing module');
          assert.match(told.missing, /the user can add a_module_nobody_has with the setting sandbox\.packages/);
          assert.match(told.network, /No module named 'requests'/);
          assert.match(told.network, /no network \(by design\)[^\n]*Reach outside services through a proxied MCP server/);
          assert.match(told.present, /no network \(by design\)[^\n]*Reach outside services through a proxied MCP server/);
          // More containers of the same image, started at once, change nothing: learned once per image.
          const more = await Promise.all(['a', 'b', 'c'].map((session) => bridge.call('print(1)', { session })));
          for (const result of more) assert.equal(structured(result).status, 'ok', textOf(result));
          await settle(bridge);
          assert.equal(listChanged(), 0, 'the listing was right from the start: nothing to tell');
        } finally {
          await bridge.close();
        }
      });
    }

    test('an image with the standard library only says so everywhere and sends no list_changed', async () => {
      const bridge = await startBridge({ sandbox: { runtime, image: TEST_IMAGE, memory: '256m' } });
      try {
        const listChanged = countListChanged(bridge);
        assert.match(await description(bridge), /^Python 3 sandbox, standard library only/);
        const told = await toldInside(bridge);
        const sentence = 'Only the Python standard library is installed.';
        assert.equal(installedIn(await capabilities(bridge)), sentence);
        assert.equal(installedIn(told.summary), sentence);
        assert.equal(installedIn(told.missing), sentence);
        await bridge.call('print(3)', { session: 'other' });
        await settle(bridge);
        assert.equal(listChanged(), 0);
        assert.match(await description(bridge), /^Python 3 sandbox, standard library only/);
      } finally {
        await bridge.close();
      }
    });

    test("the next bridge of the state dir finds the image's packages by its ID; a wrong memory is corrected by the first container", async () => {
      const first = await startBridge({ sandbox: { runtime, image: TEST_DATA_IMAGE, prewarm: false, memory: '256m' } });
      const stateDir = first.stateDir;
      try {
        assert.equal(structured(await first.call('print(1)')).status, 'ok');
      } finally {
        await first.close();
      }
      const file = join(stateDir, 'image-packages.json');
      const remembered = JSON.parse(await readFile(file, 'utf8')) as { images: Record<string, { key: string; names: string[] }> };
      const dataId = imageId(runtime, TEST_DATA_IMAGE);
      assert.ok(remembered.images[dataId]?.names.includes('numpy'), "the image's packages are remembered by its ID");
      assert.deepEqual(
        Object.values(remembered.images).map((entry) => entry.key),
        [dataId],
        'one entry, by ID (not also by the name the container ran as)',
      );
      const second = await startBridge({ stateDir, sandbox: { runtime, image: TEST_DATA_IMAGE, prewarm: false, memory: '256m' } });
      try {
        const listChanged = countListChanged(second);
        assert.match(await description(second), /^Python 3 sandbox, with packages numpy, matplotlib, scipy/, 'before any container');
        assert.match(installedIn(await capabilities(second)), /: numpy, matplotlib, scipy\b/);
        assert.equal(structured(await second.call('print(1)')).status, 'ok');
        await settle(second);
        assert.equal(listChanged(), 0, 'the listing was right: nothing to tell');
      } finally {
        await second.close();
      }
      // A memory that is wrong (written for the plain image's ID) lasts until the first container.
      const plainId = imageId(runtime, TEST_IMAGE);
      remembered.images[plainId] = { ...remembered.images[dataId]!, key: plainId, names: ['numpy'] };
      await writeFile(file, JSON.stringify(remembered));
      const third = await startBridge({ stateDir, sandbox: { runtime, image: TEST_IMAGE, prewarm: false, memory: '256m' } });
      try {
        const listChanged = countListChanged(third);
        assert.match(await description(third), /^Python 3 sandbox, with packages numpy \(/);
        assert.equal(structured(await third.call('print(1)')).status, 'ok');
        // Told once the burst of changes is over (the notice is debounced).
        await until('a tools/list_changed', () => listChanged() > 0);
        await settle(third);
        assert.equal(listChanged(), 1);
        assert.match(await description(third), /^Python 3 sandbox, standard library only/);
        assert.equal(installedIn(await capabilities(third)), 'Only the Python standard library is installed.');
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

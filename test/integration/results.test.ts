// What the model is handed after a run, through the real bridge and the MCP SDK client (which
// checks every structuredContent against run_python's outputSchema): the output budget with the
// cut said, images only on purpose and once, no base64 as text, a client that stays connected
// whatever a run produces, session state changes said, and progress messages.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { FIXTURE, startBridge, structured, textOf, type BridgeHandle } from '../helpers/bridge.ts';
import { TEST_IMAGE, testRuntimes } from '../helpers/env.ts';
import { fixtureProgram } from '../helpers/fixtures.ts';

const [runtime = 'podman'] = testRuntimes();
const sandbox = { runtime, image: TEST_IMAGE, memory: '256m', timeoutSeconds: 30, maxTimeoutSeconds: 60 };
const PICTURES = fixtureProgram('image');
const BASE64_TEXT = /[A-Za-z0-9+/]{200,}/;

/** What each kind of client reads: the text (most clients), the structured JSON (VS Code). */
function forms(result: CallToolResult): { text: string; json: string; images: number; wire: number } {
  return {
    text: textOf(result),
    json: JSON.stringify(result.structuredContent ?? null),
    images: result.content.filter((c) => c.type === 'image').length,
    wire: Buffer.byteLength(JSON.stringify(result)),
  };
}

// What the model is handed is the same whichever sandbox ran the code: the first runtime and WebAssembly.
for (const { label, sandbox: shown } of [
  { label: runtime, sandbox },
  { label: 'wasm', sandbox: { backend: 'wasm', memory: '256m', timeoutSeconds: 30, maxTimeoutSeconds: 60 } },
]) {
  describe(`results on ${label}`, () => {
    let bridge: BridgeHandle;

    before(async () => {
      bridge = await startBridge({
        sandbox: shown,
        servers: {
          fixture: { command: process.execPath, args: [FIXTURE] },
          pics: { command: process.execPath, args: [PICTURES] },
        },
      });
    });
    after(async () => {
      await bridge?.close();
    });

    test('run_python declares its output schema; refusals before a run fit it too', async () => {
      const { tools } = await bridge.client.listTools();
      const schema = tools[0]!.outputSchema as { properties: Record<string, unknown>; required?: string[] };
      assert.ok(schema.properties.status && schema.properties.stdout && schema.properties.sessionChange);
      assert.deepEqual(schema.required, ['status']);
      // The SDK client validates structuredContent against the schema: these would throw otherwise.
      const refused = await bridge.call('1', { timeout: 1000 });
      assert.deepEqual(structured(refused), {
        status: 'error',
        error: { type: 'InvalidArguments', message: 'timeout: must be at most 60 seconds (the configured maximum)' },
      });
      assert.equal(textOf(refused), 'InvalidArguments: timeout: must be at most 60 seconds (the configured maximum)');
      const unknown = await bridge.call('1', { servers: ['nowhere'] });
      assert.equal((structured(unknown).error as { type: string }).type, 'ServerUnavailable');
    });

    test('a small run is small in both forms', async () => {
      const result = await bridge.call('print("hello")\n6 * 7');
      assert.equal(textOf(result), 'hello\nOut: 42');
      const view = structured(result);
      assert.deepEqual(Object.keys(view), ['status', 'stdout', 'value', 'durationMs']);
      assert.equal(Number.isInteger(view.durationMs), true);
    });

    test('a flood is cut to the budget, head and tail kept, the cut said with a hint', async () => {
      const result = await bridge.call('for i in range(100000): print(i)');
      const { text, json } = forms(result);
      const stdout = String(structured(result).stdout);
      assert.ok(JSON.stringify(stdout).length <= 20_002, `stdout as JSON: ${JSON.stringify(stdout).length}`);
      assert.ok(json.length < 21_000, `structured: ${json.length}`);
      assert.ok(text.length < 21_000, `text: ${text.length}`);
      assert.ok(stdout.startsWith('0\n1\n2\n') && stdout.endsWith('99998\n99999\n'));
      assert.match(stdout, /\n\.\.\. \[[\d,]+ characters cut\] \.\.\.\n/);
      assert.equal(structured(result).truncated, true);
      assert.match(text, /\[output cut to [\d,]+ of about 588,9\d\d characters, head and tail kept: print less, or summarise in code/);
      assert.match(String((structured(result).notes as string[])[0]), /print less, or summarise in code/);
    });

    test('a huge value and stderr share the same budget', async () => {
      const result = await bridge.call('import sys\nsys.stderr.write("e" * 50_000)\n"v" * 3_000_000');
      const view = structured(result);
      assert.ok(String(view.value).length + String(view.stderr).length <= 20_000);
      assert.ok(String(view.value).startsWith("'vvv"));
      assert.ok(forms(result).json.length < 21_000);
    });

    test("a tool's image is not attached unless the code returns it", async () => {
      const called = await bridge.call('r = await mcp_pics.picture(kb=120)\n[type(x).__name__ for x in r]');
      assert.equal(structured(called).value, "['dict', 'str']");
      assert.equal(forms(called).images, 0);

      const returned = await bridge.call('r = await mcp_pics.picture(kb=120)\nr');
      const { text, json, images } = forms(returned);
      assert.equal(images, 1);
      assert.equal(structured(returned).images, 1);
      assert.equal(
        structured(returned).value,
        "[{'type': 'image', 'mimeType': 'image/png', 'data': '<image image/png 120 KiB, attached>'}, 'a 120 KB picture']",
      );
      assert.doesNotMatch(text, BASE64_TEXT);
      assert.doesNotMatch(json, BASE64_TEXT);

      const printed = await bridge.call('print(await mcp_pics.picture(kb=120))');
      assert.equal(forms(printed).images, 0);
      assert.match(String(structured(printed).stdout), /<image image\/png 120 KiB, not attached: return it as the last value to show it>/);
      assert.doesNotMatch(forms(printed).text, BASE64_TEXT);
    });

    test('the same image bytes reach the model once per result', async () => {
      const emittedAndReturned = await bridge.call(
        'import base64\nr = await mcp_pics.picture(kb=60)\nemit_image(base64.b64decode(r[0]["data"]))\nr',
      );
      assert.equal(forms(emittedAndReturned).images, 1);
      const loop = await bridge.call('[await mcp_pics.picture(kb=20, seed=5) for _ in range(5)]');
      assert.equal(forms(loop).images, 1);
      assert.equal((String(structured(loop).value).match(/<image image\/png 20 KiB, attached>/g) ?? []).length, 5);
      const distinct = await bridge.call('[await mcp_pics.picture(kb=20, seed=s) for s in range(1, 4)]');
      assert.equal(forms(distinct).images, 3);
    });

    test('an SVG with onload never reaches the client as an image: emitted, returned from a tool, or as a file', async () => {
      const svg = `'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(document.domain)"><circle r="9"/></svg>'`;
      const emitted = await bridge.call(`emit_image(${svg}.encode(), "image/svg+xml")\nemit_image(b"\\x89PNG\\r\\n\\x1a\\n" + bytes(64))`);
      assert.deepEqual(
        emitted.content.filter((c) => c.type === 'image').map((c) => (c as { mimeType: string }).mimeType),
        ['image/png'],
      );
      assert.match(
        textOf(emitted),
        /1 image not attached: only PNG, JPEG, GIF and WebP images are returned \(SVG and other image types can carry scripts\)/,
      );

      const returned = await bridge.call('(await mcp_pics.drawing())');
      assert.equal(forms(returned).images, 0);
      assert.match(String(structured(returned).value), /<image image\/svg\+xml \d+ bytes, not attached: only PNG/);
      assert.doesNotMatch(JSON.stringify(returned), /onload|PHN2Zy/, 'neither the SVG nor its base64 reaches the client');

      const file = await bridge.call(`open("/work/out/drawing.svg", "w").write(${svg} + " " * 9000)`);
      const resources = file.content.flatMap((c) => (c.type === 'resource' ? [c.resource] : []));
      assert.deepEqual(
        resources.map((r) => r.mimeType),
        ['text/plain'],
        'a file, as text',
      );
      assert.equal(forms(file).images, 0);
    });

    test('nothing a run produces drops the connection; the next call works', async () => {
      const images = await bridge.call('import os\nfor _ in range(2):\n    emit_image(b"\\x89PNG" + os.urandom(4 * 1024 * 1024 - 4))');
      const big = forms(images);
      assert.equal(big.images, 1, 'one 4 MiB image fits the budget of a result, the second does not');
      assert.match(big.text, /1 image not attached: over the 4 MiB image budget of a result/);
      assert.ok(big.wire < 7 * 1024 * 1024, `result of ${big.wire} bytes`);

      const value = await bridge.call('"v" * 3_000_000');
      assert.ok(forms(value).wire < 100_000, `result of ${forms(value).wire} bytes`);
      const printed = await bridge.call('for _ in range(3000): print("x" * 100)');
      assert.ok(forms(printed).wire < 100_000, `result of ${forms(printed).wire} bytes`);
      assert.equal(structured(printed).truncated, true);

      const next = await bridge.call('1 + 1');
      assert.equal(structured(next).value, '2');
    });

    test('progress messages show the last complete line and count tool calls in words', async () => {
      const messages: string[] = [];
      const result = await bridge.call(
        [
          'import sys, time',
          'await mcp_fixture.echo(message="x")',
          'for i in range(3):',
          '    print(f"step {i}", flush=True)',
          '    sys.stdout.write("half")',
          '    sys.stdout.flush()',
          '    time.sleep(1.5)',
          '    print(" done", flush=True)',
        ].join('\n'),
        {},
        { onprogress: (progress: { message?: string }) => void messages.push(progress.message ?? '') },
      );
      assert.equal(structured(result).status, 'ok', textOf(result));
      assert.ok(messages.length >= 1, 'no progress');
      // A message sent while the call is still on its way (a loaded machine) counts none yet.
      for (const message of messages) assert.match(message, /^running for \d+ s(, 1 tool call)?(: (step \d|half done))?$/);
      assert.ok(
        messages.some((m) => /, 1 tool call: (step \d|half done)$/.test(m)),
        messages.join(' | '),
      );
    });
  });
}

describe(`session changes are said on ${runtime}`, () => {
  let bridge: BridgeHandle;
  const change = (result: CallToolResult) => structured(result).sessionChange as { kind: string; reason: string } | undefined;

  before(async () => {
    bridge = await startBridge({ sandbox: { ...sandbox, maxSessions: 2, prewarm: false } });
  });
  after(async () => {
    await bridge?.close();
  });

  test('a brand-new session, and a reset of one, need no note', async () => {
    const first = await bridge.call('x = 1', { session: 'fresh', reset: true });
    assert.equal(change(first), undefined);
    assert.equal(structured(first).session, 'fresh');
    const again = await bridge.call('x', { session: 'fresh' });
    assert.equal(change(again), undefined);
    assert.doesNotMatch(textOf(again), /session "/);
  });

  test('reset: said with its reason', async () => {
    await bridge.call('x = 1', { session: 'fresh' });
    const reset = await bridge.call('"x" in globals()', { session: 'fresh', reset: true });
    assert.deepEqual(change(reset), { kind: 'reset', reason: 'asked for with reset: true' });
    assert.equal(structured(reset).value, 'False');
    assert.match(
      textOf(reset),
      /^\[session "fresh" was reset: asked for with reset: true\. This run started with a fresh interpreter; earlier variables and imports are gone\.\]\nOut: False$/,
    );
  });

  test('evicted: the least recently used session made room for another', async () => {
    await bridge.call('v = "a"', { session: 'a' });
    await bridge.call('v = "b"', { session: 'b' });
    await bridge.call('v = "c"', { session: 'c' });
    const back = await bridge.call('"v" in globals()', { session: 'a' });
    assert.equal(change(back)?.kind, 'evicted');
    assert.match(change(back)!.reason, /to make room for session "c": at most 2 sessions are kept \(sandbox\.maxSessions\)/);
    assert.match(textOf(back), /^\[session "a" was evicted: /);
    const next = await bridge.call('1', { session: 'a' });
    assert.equal(change(next), undefined, 'said once');
  });

  test('lost: the sandbox ended between runs', async () => {
    await bridge.call('import os, threading\nthreading.Timer(0.5, os._exit, args=(3,)).start()', { session: 'doomed' });
    await new Promise((r) => setTimeout(r, 2500));
    const after = await bridge.call('1', { session: 'doomed' });
    assert.equal(change(after)?.kind, 'lost');
    assert.match(change(after)!.reason, /its sandbox ended after the last run \(exit code 3/);
  });

  test('lost: a cancelled run had to restart the interpreter (its result never reached the caller)', async () => {
    await bridge.call('kept = 1', { session: 'cancelled' });
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 800);
    const stubborn = 'while True:\n    try:\n        while True:\n            pass\n    except KeyboardInterrupt:\n        pass';
    await assert.rejects(bridge.call(stubborn, { session: 'cancelled' }, { signal: abort.signal }));
    const next = await bridge.call('"kept" in globals()', { session: 'cancelled' });
    assert.equal(structured(next).value, 'False');
    assert.equal(change(next)?.kind, 'lost');
    assert.match(change(next)!.reason, /cancelled/);
  });
});

test(`reaped: a session closed for idleness says so on its next run (${runtime})`, async () => {
  const bridge = await startBridge({ sandbox: { ...sandbox, idleSeconds: 1, prewarm: false } });
  try {
    await bridge.call('x = 1', { session: 'idle' });
    await new Promise((r) => setTimeout(r, 3000));
    const result = await bridge.call('x', { session: 'idle' });
    assert.equal(structured(result).status, 'error');
    assert.deepEqual(structured(result).sessionChange, { kind: 'reaped', reason: 'closed after 1 s idle (sandbox.idleSeconds)' });
    assert.match(
      textOf(result),
      /^\[session "idle" was reaped: closed after 1 s idle \(sandbox\.idleSeconds\)\. This run started with a fresh interpreter; earlier variables and imports are gone\.\]\nTraceback/,
    );
  } finally {
    await bridge.close();
  }
});

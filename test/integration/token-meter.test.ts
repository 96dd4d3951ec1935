// The token meter through the real bridge: a run that calls a proxied tool records in the run
// log what the model got (the result's text), the bytes of the tool's result that stayed in the
// sandbox, and the tokens of the tool's listing as the server's own tools/list shows it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { FIXTURE, startBridge, textOf, type BridgeHandle } from '../helpers/bridge.ts';
import { testRuntimes, TEST_IMAGE } from '../helpers/env.ts';
import { listingText } from '../../src/bridge/results/meter.ts';
import { parseRunLog, type RunRecord } from '../../src/state/run-log/reader.ts';
import { estimateTokens, TOKEN_ESTIMATE } from '../../src/shared/token-estimate.ts';

/** The tokens of each fixture tool's listing, from the fixture's own tools/list. */
async function fixtureListings(): Promise<Map<string, number>> {
  const client = new Client({ name: 'meter-test', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [FIXTURE] }));
  try {
    const { tools } = await client.listTools();
    return new Map(
      tools.map((t) => [
        t.name,
        estimateTokens(listingText({ tool: t.name, description: t.description ?? '', inputSchema: t.inputSchema })),
      ]),
    );
  } finally {
    await client.close();
  }
}

// The meter is counted by the bridge, the same on every engine: on the first test runtime.
for (const runtime of testRuntimes().slice(0, 1)) {
  describe(`token meter on ${runtime}`, () => {
    let bridge: BridgeHandle;
    let listings: Map<string, number>;
    before(async () => {
      listings = await fixtureListings();
      bridge = await startBridge({
        servers: { fixture: { command: process.execPath, args: [FIXTURE] } },
        sandbox: { runtime, image: TEST_IMAGE, memory: '256m', timeoutSeconds: 30 },
      });
    });
    after(async () => {
      await bridge?.close();
    });

    // The run-end line is written before the result goes out: it is there when the call returns.
    const runOf = (code: string): RunRecord => {
      const run = parseRunLog(readFileSync(join(bridge.stateDir, 'runs.jsonl'), 'utf8')).find((r) => r.code === code);
      assert.ok(run, `no run of ${code} in the log`);
      return run;
    };

    test('a run that keeps a large tool result in the sandbox: the log records the text the model got, the bytes kept, the listing', async () => {
      const code = 'r = await mcp_fixture.big(size=50000)\nlen(r)';
      const text = textOf(await bridge.call(code));
      assert.equal(text, 'Out: 50000\n[1 tool call]');
      const meter = runOf(code).meter;
      assert.ok(meter, 'the run has no meter');
      // What the code received: the text as a JSON string in the converted result.
      assert.ok(meter.toolResultBytes > 50_000 && meter.toolResultBytes < 50_100, `tool result bytes ${meter.toolResultBytes}`);
      assert.deepEqual(meter, {
        modelChars: text.length,
        modelTokens: estimateTokens(text),
        toolResultBytes: meter.toolResultBytes,
        keptBytes: meter.toolResultBytes - Buffer.byteLength(text),
        toolsUsed: 1,
        listingTokens: listings.get('big'),
        tokenizer: TOKEN_ESTIMATE,
      });
    });

    test('each tool used counts its listing once; what the model got back is not counted as kept', async () => {
      const code = 'r = await mcp_fixture.big(size=3000)\nawait mcp_fixture.big(size=10)\nawait mcp_fixture.echo(message="hi")\nr';
      const text = textOf(await bridge.call(code));
      const meter = runOf(code).meter!;
      assert.equal(meter.toolsUsed, 2);
      assert.equal(meter.listingTokens, listings.get('big')! + listings.get('echo')!);
      assert.equal(meter.modelChars, text.length);
      // The 3,000 characters came back to the model in the value: only the rest can have stayed.
      assert.ok(text.length > 3000, text.slice(0, 100));
      assert.equal(meter.keptBytes, Math.max(0, meter.toolResultBytes - Buffer.byteLength(text)));
      assert.ok(meter.keptBytes < 100, `kept ${meter.keptBytes} bytes`);
    });

    test('a run without tool calls has a meter with no tool results and no listing', async () => {
      const code = 'print("no tools")';
      const text = textOf(await bridge.call(code));
      assert.deepEqual(runOf(code).meter, {
        modelChars: text.length,
        modelTokens: estimateTokens(text),
        toolResultBytes: 0,
        keptBytes: 0,
        toolsUsed: 0,
        listingTokens: 0,
        tokenizer: TOKEN_ESTIMATE,
      });
    });
  });
}

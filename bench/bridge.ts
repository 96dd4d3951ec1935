// Bridge figures: the listing's token cost against listing every proxied tool, and the
// overhead of a proxied tool call made from sandbox code against the same call made directly.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { encode } from 'gpt-tokenizer';
import { summarize, timeEach, type Summary } from './stats.ts';

const FIXTURE = resolve('test/fixtures/fixture-server.ts');

async function connect(command: string, args: string[]): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command, args, env: process.env as Record<string, string> }));
  return client;
}

async function bridgeClient(servers: Record<string, unknown>, sandbox: Record<string, unknown>): Promise<Client> {
  const dir = await mkdtemp(join(tmpdir(), 'cem-bench-'));
  const file = join(dir, 'config.json');
  await writeFile(file, JSON.stringify({ servers, sandbox, stateDir: join(dir, 'state') }));
  return connect(process.execPath, [resolve('dist/cli.js'), '--config', file]);
}

export function listingTokens(tools: unknown[]): number {
  return encode(JSON.stringify(tools)).length;
}

export interface ListingRow {
  servers: number;
  /** What a client puts before the model: name, description and input schema. */
  tokens: number;
  /** The whole answer, outputSchema included (clients keep that for themselves). */
  answerTokens: number;
}

/** Tokens of the bridge's tools/list answer with 0, 10 and 100 configured servers. */
export async function listingFigures(sandbox: Record<string, unknown>): Promise<ListingRow[]> {
  const rows: ListingRow[] = [];
  for (const n of [0, 10, 100]) {
    const servers = Object.fromEntries(Array.from({ length: n }, (_, i) => [`server${i}`, { command: process.execPath, args: [FIXTURE] }]));
    const client = await bridgeClient(servers, sandbox);
    const { tools } = await client.listTools();
    const read = tools.map(({ name, description, inputSchema }) => ({ name, description, inputSchema }));
    rows.push({ servers: n, tokens: listingTokens(read), answerTokens: listingTokens(tools) });
    await client.close();
  }
  return rows;
}

export interface CallFigures {
  direct: Summary;
  fromSandbox: Summary;
  overheadMsP50: number;
  sequentialPerSecond: number;
  concurrent: { n: number; seconds: number };
}

/** Echo calls to the fixture: direct SDK client vs from sandbox code through the bridge. */
export async function callFigures(sandbox: Record<string, unknown>, n: number): Promise<CallFigures> {
  const direct = await connect(process.execPath, [FIXTURE]);
  await direct.callTool({ name: 'echo', arguments: { message: 'warm' } });
  const directSamples = await timeEach(n, () => direct.callTool({ name: 'echo', arguments: { message: 'x' } }));
  await direct.close();

  const bridge = await bridgeClient({ fixture: { command: process.execPath, args: [FIXTURE] } }, sandbox);
  const run = async (code: string) => {
    const result = (await bridge.callTool({ name: 'run_python', arguments: { code, timeout: 120 } })) as CallToolResult;
    const structured = result.structuredContent as { status: string; value: string; stdout: string } | undefined;
    if (structured?.status !== 'ok') throw new Error(`bench run failed: ${JSON.stringify(result.content)}`);
    return structured;
  };
  await run('await mcp_fixture.echo(message="warm")');
  const timed = await run(
    [
      'import time, json',
      'samples = []',
      `for _ in range(${n}):`,
      '    t = time.perf_counter()',
      '    await mcp_fixture.echo(message="x")',
      '    samples.append((time.perf_counter() - t) * 1000)',
      'print(json.dumps(samples))',
    ].join('\n'),
  );
  const sandboxSamples = JSON.parse(timed.stdout) as number[];
  const total = sandboxSamples.reduce((a, b) => a + b, 0);
  const concurrentN = 10;
  const concurrent = await run(
    `import asyncio, time\nt = time.perf_counter()\nawait asyncio.gather(*[mcp_fixture.sleep(ms=1000) for _ in range(${concurrentN})])\ntime.perf_counter() - t`,
  );
  await bridge.close();
  const directSummary = summarize(directSamples);
  const sandboxSummary = summarize(sandboxSamples);
  return {
    direct: directSummary,
    fromSandbox: sandboxSummary,
    overheadMsP50: sandboxSummary.p50 - directSummary.p50,
    sequentialPerSecond: (sandboxSamples.length / total) * 1000,
    concurrent: { n: concurrentN, seconds: Number(concurrent.value) },
  };
}

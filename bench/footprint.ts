// Footprint and load: bridge start to its first tools/list answer, the bridge's memory idle
// and with warm sessions, and 200 executions across 4 sessions, 2 at a time, all checked.
import { readFileSync, statSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { summarize, type Summary } from './stats.ts';

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

async function spawnBridge(sandbox: Record<string, unknown>): Promise<{ client: Client; pid: number; readyMs: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'cem-bench-'));
  const file = join(dir, 'config.json');
  await writeFile(file, JSON.stringify({ sandbox, stateDir: join(dir, 'state') }));
  const started = performance.now();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [resolve('dist/cli.js'), '--config', file],
    env: process.env as Record<string, string>,
    stderr: 'ignore',
  });
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(transport);
  await client.listTools();
  return { client, pid: transport.pid ?? 0, readyMs: performance.now() - started };
}

async function run(client: Client, code: string, session: string): Promise<string | null> {
  const result = (await client.callTool({ name: 'run_python', arguments: { code, session } })) as CallToolResult;
  const structured = result.structuredContent as { status: string; value: string | null } | undefined;
  return structured?.status === 'ok' ? structured.value : null;
}

export interface FootprintFigures {
  startToToolsList: Summary;
  idleRssMb: number;
  fourWarmSessionsRssMb: number;
  bundles: Record<string, number>;
}

export async function footprintFigures(sandbox: Record<string, unknown>, starts: number): Promise<FootprintFigures> {
  const samples: number[] = [];
  for (let i = 0; i < starts; i++) {
    const { client, readyMs } = await spawnBridge(sandbox);
    samples.push(readyMs);
    await client.close();
  }
  const { client, pid } = await spawnBridge(sandbox);
  await new Promise((r) => setTimeout(r, 500));
  const idleRssMb = rssMb(pid);
  for (let s = 0; s < 4; s++) await run(client, 'print(1)', `s${s}`);
  const fourWarmSessionsRssMb = rssMb(pid);
  await client.close();
  const bundles: Record<string, number> = {};
  for (const file of ['dist/cli.js', 'dist/extension.cjs', 'dist-vsix/code-execution-mode.vsix']) {
    try {
      bundles[file] = statSync(file).size;
    } catch {
      // not built in this run
    }
  }
  return { startToToolsList: summarize(samples), idleRssMb, fourWarmSessionsRssMb, bundles };
}

export interface LoadFigures {
  executions: number;
  correct: number;
  seconds: number;
  perSecond: number;
  rssBeforeMb: number;
  rssAfterMb: number;
  /** RSS after each further batch of the same size (a soak): flat means no leak. */
  soakRssMb: number[];
}

/** `total` executions over 4 sessions, `parallel` at a time; each result is checked. */
export async function loadFigures(sandbox: Record<string, unknown>, total: number, soakBatches = 0, parallel = 2): Promise<LoadFigures> {
  const { client, pid } = await spawnBridge(sandbox);
  for (let s = 0; s < 4; s++) await run(client, 'n = 0', `load${s}`);
  // Warm-up so that "before" already includes the steady state.
  for (let i = 0; i < 8; i++) await run(client, 'n += 0\nn', `load${i % 4}`);
  const rssBeforeMb = rssMb(pid);
  let next = 0;
  let correct = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < total) {
      const i = next++;
      const value = await run(client, `x = ${i}\n[x * 2, len("${'y'.repeat(i % 50)}")]`, `load${i % 4}`);
      if (value === `[${i * 2}, ${i % 50}]`) correct++;
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  const seconds = (performance.now() - started) / 1000;
  await new Promise((r) => setTimeout(r, 500));
  const rssAfterMb = rssMb(pid);
  const soakRssMb: number[] = [];
  for (let batch = 0; batch < soakBatches; batch++) {
    next = 0;
    await Promise.all(Array.from({ length: parallel }, worker));
    await new Promise((r) => setTimeout(r, 300));
    soakRssMb.push(rssMb(pid));
  }
  await client.close();
  return {
    executions: total,
    correct: correct - soakBatches * total,
    seconds,
    perSecond: total / seconds,
    rssBeforeMb,
    rssAfterMb,
    soakRssMb,
  };
}

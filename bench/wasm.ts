// The WebAssembly sandbox beside the containers, in the same run: a session's cold start, a warm
// print(1) in the session and through MCP, a proxied call's overhead from its code, the memory a
// session adds (its Deno process), and the size of the .vsix that carries it.
import { mkdtemp, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { execa } from 'execa';
import { defaultSandboxConfig } from '../src/config/schema.ts';
import { SessionManager } from '../src/sandbox/sessions/manager.ts';
import { callFigures, type CallFigures } from './bridge.ts';
import { ms, summarize, timeEach, type Summary } from './stats.ts';

export interface WasmFigures {
  coldSession: Summary;
  warm: Summary;
  warmThroughMcp: Summary;
  calls: CallFigures;
  /** What one more session's process takes, resident (MB). */
  sessionRssMb: number;
  /** The .vsix of this platform, when `npm run package` made one (MB). */
  vsixMb: number | undefined;
}

/** Resident memory (MB) of this process's children whose command line contains `marker`. */
async function rssOf(marker: string): Promise<number> {
  const { stdout } = await execa('ps', ['-o', 'rss=,args=', '--ppid', String(process.pid)], { reject: false });
  return (
    stdout
      .split('\n')
      .filter((line) => line.includes(marker))
      .reduce((sum, line) => sum + Number(line.trim().split(/\s+/)[0] ?? 0), 0) / 1024
  );
}

export async function wasmFigures(n: number): Promise<WasmFigures> {
  const sandbox = new SessionManager(defaultSandboxConfig({ backend: 'wasm', prewarm: false }));
  let coldSession: Summary;
  let warm: Summary;
  let sessionRssMb: number;
  try {
    const cold: number[] = [];
    for (let i = 0; i < Math.min(n, 10); i++) {
      const started = performance.now();
      const result = await sandbox.execute('print(1)', { session: `cold-${i}` });
      cold.push(performance.now() - started);
      if (result.stdout !== '1\n' || !result.coldStart) throw new Error(`unexpected cold result ${JSON.stringify(result)}`);
      await sandbox.closeSession(`cold-${i}`);
    }
    coldSession = summarize(cold);
    const before = await rssOf('deno-kernel/host.ts');
    await sandbox.execute('pass', { session: 'warm' });
    sessionRssMb = (await rssOf('deno-kernel/host.ts')) - before;
    warm = summarize(
      await timeEach(Math.max(n, 20), async () => {
        const result = await sandbox.execute('print(1)', { session: 'warm' });
        if (result.stdout !== '1\n') throw new Error('unexpected warm result');
      }),
    );
  } finally {
    await sandbox.close();
  }
  const warmThroughMcp = await mcpWarm(n);
  const calls = await callFigures({ backend: 'wasm' }, Math.max(5, Math.min(n * 4, 200)));
  const vsix = await stat('dist-vsix/code-execution-mode.vsix').catch(() => undefined);
  return { coldSession, warm, warmThroughMcp, calls, sessionRssMb, vsixMb: vsix ? vsix.size / 1024 / 1024 : undefined };
}

/** A warm print(1) as a client sees it: run_python through the bridge, in WebAssembly. */
async function mcpWarm(n: number): Promise<Summary> {
  const dir = await mkdtemp(join(tmpdir(), 'cem-bench-wasm-'));
  const file = join(dir, 'config.json');
  await writeFile(file, JSON.stringify({ sandbox: { backend: 'wasm' }, stateDir: join(dir, 'state') }));
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [resolve('dist/cli.js'), '--config', file],
      env: process.env as Record<string, string>,
    }),
  );
  try {
    await client.callTool({ name: 'run_python', arguments: { code: 'pass' } });
    return summarize(await timeEach(Math.max(n, 20), () => client.callTool({ name: 'run_python', arguments: { code: 'print(1)' } })));
  } finally {
    await client.close();
  }
}

export function printWasm(figures: WasmFigures, n: number): void {
  console.log(`\nThe WebAssembly sandbox (Pyodide in Deno), ${n} runs each (p50 / p95)\n`);
  console.log(
    '| cold session (first run) | warm print(1), in the session | warm print(1) through MCP | proxied call added (p50) | 10 concurrent 1 s calls | memory per session | .vsix |',
  );
  console.log('|---|---|---|---|---|---|---|');
  console.log(
    `| ${ms(figures.coldSession.p50)} / ${ms(figures.coldSession.p95)} | ${ms(figures.warm.p50)} / ${ms(figures.warm.p95)} | ` +
      `${ms(figures.warmThroughMcp.p50)} / ${ms(figures.warmThroughMcp.p95)} | ${ms(figures.calls.overheadMsP50)} | ` +
      `${figures.calls.concurrent.seconds.toFixed(2)} s | ${figures.sessionRssMb.toFixed(0)} MB RSS | ` +
      `${figures.vsixMb === undefined ? 'not built (npm run package)' : `${figures.vsixMb.toFixed(1)} MB`} |`,
  );
}

// The bridge's own path, measured through MCP: a warm `print(1)` beside a bare pipe round trip
// to a container (the floor), a fresh bridge's first answer (spawn, initialize, first run)
// beside a bare `run --rm`, and how long a bridge with a warm session takes to close.
// `node bench/warm.ts [--n N] [--rounds R] [DIST...]` compares bridges built into several dist
// folders, interleaved call by call so that the machine's load falls on all of them alike.
import { spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { execa } from 'execa';
import { ms, summarize, timeEach, type Summary } from './stats.ts';

export interface BenchSandbox {
  runtime: string;
  image: string;
}

async function configFile(sandbox: BenchSandbox): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cem-bench-'));
  const file = join(dir, 'config.json');
  await writeFile(file, JSON.stringify({ sandbox, stateDir: join(dir, 'state') }));
  return file;
}

async function spawnBridge(dist: string, config: string): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [resolve(dist, 'cli.js'), '--config', config],
    env: process.env as Record<string, string>,
    stderr: 'ignore',
  });
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

async function printOne(client: Client): Promise<void> {
  const result = (await client.callTool({ name: 'run_python', arguments: { code: 'print(1)' } })) as CallToolResult;
  const structured = result.structuredContent as { status?: string; stdout?: string } | undefined;
  if (structured?.status !== 'ok' || structured.stdout !== '1\n') throw new Error(`unexpected result ${JSON.stringify(result)}`);
}

/** Round trips of one line through a plain `run -i` container echoing its stdin: the floor of any warm run. */
export async function pipeRoundTrip(sandbox: BenchSandbox, n: number): Promise<Summary> {
  const echo = 'import sys\nfor line in sys.stdin.buffer:\n    sys.stdout.buffer.write(line)\n    sys.stdout.buffer.flush()';
  const child = spawn(sandbox.runtime, ['run', '--rm', '-i', '--network', 'none', sandbox.image, 'python3', '-c', echo], {
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  let waiting: (() => void) | undefined;
  child.stdout.on('data', () => waiting?.());
  const roundTrip = () =>
    new Promise<void>((done) => {
      waiting = done;
      child.stdin.write('x\n');
    });
  for (let i = 0; i < 5; i++) await roundTrip();
  const samples = await timeEach(n, roundTrip);
  child.stdin.end();
  await new Promise((done) => child.once('exit', done));
  return summarize(samples);
}

/** Warm `print(1)` through MCP, one bridge per dist folder, interleaved call by call. */
export async function warmThroughMcp(sandbox: BenchSandbox, dists: string[], n: number): Promise<Summary[]> {
  const config = await configFile(sandbox);
  const clients = await Promise.all(dists.map((dist) => spawnBridge(dist, config)));
  try {
    for (const client of clients) for (let i = 0; i < 20; i++) await printOne(client);
    const samples: number[][] = dists.map(() => []);
    for (let i = 0; i < n; i++) {
      // A different order each time: no bridge always goes first.
      for (let k = 0; k < clients.length; k++) {
        const j = (i + k) % clients.length;
        const started = performance.now();
        await printOne(clients[j]!);
        samples[j]!.push(performance.now() - started);
      }
    }
    return samples.map(summarize);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
}

export interface FreshFigures {
  /** Spawn, initialize, first print(1) answered. */
  firstAnswer: Summary;
  /** client.close() with one warm session: until the bridge has exited. */
  close: Summary;
}

/** A fresh bridge's first answer and its close, per dist folder, interleaved. */
export async function freshBridge(sandbox: BenchSandbox, dists: string[], rounds: number): Promise<FreshFigures[]> {
  const first: number[][] = dists.map(() => []);
  const close: number[][] = dists.map(() => []);
  for (let i = 0; i < rounds; i++) {
    for (let k = 0; k < dists.length; k++) {
      const j = (i + k) % dists.length;
      const config = await configFile(sandbox);
      const started = performance.now();
      const client = await spawnBridge(dists[j]!, config);
      await printOne(client);
      first[j]!.push(performance.now() - started);
      const closing = performance.now();
      await client.close();
      close[j]!.push(performance.now() - closing);
    }
  }
  return dists.map((_, j) => ({ firstAnswer: summarize(first[j]!), close: summarize(close[j]!) }));
}

/** A bare `run --rm IMAGE python3 -c pass`: what any first answer has to wait for. */
export async function bareStart(sandbox: BenchSandbox, n: number): Promise<Summary> {
  return summarize(
    await timeEach(n, () => execa(sandbox.runtime, ['run', '--rm', '--network', 'none', sandbox.image, 'python3', '-c', 'pass'])),
  );
}

const pair = (s: Summary) => `${ms(s.p50)} / ${ms(s.min)}`;

if (import.meta.main) {
  const args = process.argv.slice(2);
  const option = (name: string, fallback: number) => {
    const at = args.indexOf(name);
    if (at < 0) return fallback;
    const value = Number(args.splice(at, 2)[1]);
    return Number.isFinite(value) ? value : fallback;
  };
  const n = option('--n', 300);
  const rounds = option('--rounds', 10);
  const dists = args.length > 0 ? args : ['dist'];
  const sandbox = {
    runtime: (process.env.CEM_TEST_RUNTIMES ?? 'podman').split(',')[0]!,
    image: process.env.CEM_TEST_IMAGE ?? 'localhost/cem-sandbox:bookworm',
  };
  const pipe = await pipeRoundTrip(sandbox, n);
  const warm = await warmThroughMcp(sandbox, dists, n);
  const bare = await bareStart(sandbox, rounds);
  const fresh = await freshBridge(sandbox, dists, rounds);
  console.log(`${sandbox.runtime}: bare pipe round trip ${pair(pipe)}; bare run --rm ${pair(bare)} (p50 / min)`);
  console.log('| bridge | warm print(1) through MCP | first answer | first answer / bare run --rm | close |');
  console.log('|---|---|---|---|---|');
  dists.forEach((dist, j) => {
    const f = fresh[j]!;
    console.log(
      `| ${dist} | ${pair(warm[j]!)} | ${pair(f.firstAnswer)} | ${(f.firstAnswer.p50 / bare.p50).toFixed(2)}x | ${pair(f.close)} |`,
    );
  });
}

// Starting the real bridge process (dist/cli.js) and talking to it with the MCP SDK client,
// and starting the fixture server over Streamable HTTP on loopback.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import { fixtureProgram } from './fixtures.ts';

export const FIXTURE = fixtureProgram('fixture');
export const MEMORY_SERVER = resolve('node_modules/@modelcontextprotocol/server-memory/dist/index.js');
export const FILESYSTEM_SERVER = resolve('node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');

export interface BridgeHandle {
  client: Client;
  stateDir: string;
  /** The file the bridge was started with (--config); it applies changes to it while it runs. */
  configFile: string;
  stderr: () => string;
  /** The bridge process's id (to read its memory from /proc). */
  pid: number | null;
  call(
    code: string,
    extra?: Record<string, unknown>,
    options?: { signal?: AbortSignal; onprogress?: (progress: Progress) => void },
  ): Promise<CallToolResult>;
  close(): Promise<void>;
}

export async function tempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

/** `launcher`: a command the bridge is started through, which then runs it (e.g. `prlimit --nofile=512:512 --`). */
export async function startBridge(
  config: Record<string, unknown>,
  env: Record<string, string> = {},
  args: string[] = [],
  launcher: string[] = [],
): Promise<BridgeHandle> {
  const dir = await tempDir('cem-bridge-');
  const stateDir = join(dir, 'state');
  const configFile = join(dir, 'config.json');
  // A container unless the test says otherwise: never WebAssembly in place of a container that failed.
  // No spare started ahead unless the test asks for one: a test's bridge mostly runs one session,
  // and the spare that replaces it would be started only to be stopped (a container's start in
  // CPU, per bridge). The spare's own behaviour is tested where a test sets `prewarm: true`.
  const sandbox = { backend: 'container', prewarm: false, ...(config.sandbox as Record<string, unknown> | undefined) };
  await writeFile(configFile, JSON.stringify({ stateDir, ...config, sandbox }));
  const transport = new StdioClientTransport({
    command: launcher[0] ?? process.execPath,
    args: [...(launcher.length ? [...launcher.slice(1), process.execPath] : []), resolve('dist/cli.js'), '--config', configFile, ...args],
    env: { ...(process.env as Record<string, string>), ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: 'bridge-test', version: '1.0.0' });
  await client.connect(transport);
  return {
    client,
    stateDir,
    configFile,
    stderr: () => stderr,
    pid: transport.pid,
    call: async (code, extra = {}, options = {}) =>
      (await client.callTool({ name: 'run_python', arguments: { code, ...extra } }, undefined, {
        timeout: 120_000,
        ...options,
      })) as CallToolResult,
    close: () => client.close(),
  };
}

export function textOf(result: CallToolResult): string {
  return result.content.flatMap((c) => (c.type === 'text' ? [c.text] : [])).join('\n');
}

export function structured(result: CallToolResult): Record<string, unknown> {
  return result.structuredContent ?? {};
}

/** The fixture server over Streamable HTTP on 127.0.0.1; resolves with its URL. */
export async function startHttpFixture(
  env: Record<string, string> = {},
  transport: 'http' | 'sse' = 'http',
): Promise<{ url: string; process: ChildProcess; stop(): void }> {
  const child = spawn(process.execPath, [FIXTURE, `--${transport}`, '0'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolveUrl, reject) => {
    const lines = createInterface({ input: child.stdout });
    lines.once('line', (line) => resolveUrl(line.trim()));
    child.once('exit', (code) => reject(new Error(`fixture exited (${code})`)));
  });
  return { url, process: child, stop: () => child.kill() };
}

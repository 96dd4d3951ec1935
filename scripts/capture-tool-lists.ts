// Captures the real tool lists (name, description, inputSchema) of published MCP servers into
// test/fixtures/tool-lists.json, so the search evaluation can run on real catalogs.
// Run from the repo root: `node scripts/capture-tool-lists.ts` (Node 24; needs the npm registry).
// Each server is installed with npm into its own folder under a fresh temp dir (outside the repo),
// started over stdio with dummy credentials and arguments, asked for its tools (all pages), and
// stopped. Servers that fail to install, start or answer within 60 s are left out and reported.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';

const OUT = 'test/fixtures/tool-lists.json';
const TIMEOUT_MS = 60_000;

interface Spec {
  pkg: string;
  args?: (scratch: string) => string[];
  env?: (scratch: string) => Record<string, string>;
}

function fsRoot(scratch: string): string {
  const dir = join(scratch, 'fs-root');
  mkdirSync(dir, { recursive: true });
  return dir;
}

// Dummy credentials and unreachable local addresses only: listing tools must not need the network.
// Known failures (reported, not fatal): redis connects at startup and exits when it can't; gitlab
// publishes empty inputSchemas (no "type": "object"), which the SDK client rejects.
const SERVERS: Record<string, Spec> = {
  everything: { pkg: '@modelcontextprotocol/server-everything', args: () => ['stdio'] },
  memory: { pkg: '@modelcontextprotocol/server-memory', env: (s) => ({ MEMORY_FILE_PATH: join(s, 'memory.jsonl') }) },
  filesystem: { pkg: '@modelcontextprotocol/server-filesystem', args: (s) => [fsRoot(s)] },
  github: { pkg: '@modelcontextprotocol/server-github', env: () => ({ GITHUB_PERSONAL_ACCESS_TOKEN: 'dummy' }) },
  slack: { pkg: '@modelcontextprotocol/server-slack', env: () => ({ SLACK_BOT_TOKEN: 'xoxb-dummy', SLACK_TEAM_ID: 'T000' }) },
  postgres: { pkg: '@modelcontextprotocol/server-postgres', args: () => ['postgresql://127.0.0.1:1/none'] },
  gitlab: {
    pkg: '@modelcontextprotocol/server-gitlab',
    env: () => ({ GITLAB_PERSONAL_ACCESS_TOKEN: 'dummy', GITLAB_API_URL: 'http://127.0.0.1:1/api/v4' }),
  },
  'google-maps': { pkg: '@modelcontextprotocol/server-google-maps', env: () => ({ GOOGLE_MAPS_API_KEY: 'dummy' }) },
  'brave-search': { pkg: '@modelcontextprotocol/server-brave-search', env: () => ({ BRAVE_API_KEY: 'dummy' }) },
  'sequential-thinking': { pkg: '@modelcontextprotocol/server-sequential-thinking' },
  puppeteer: { pkg: '@modelcontextprotocol/server-puppeteer', env: () => ({ PUPPETEER_SKIP_DOWNLOAD: '1' }) },
  redis: { pkg: '@modelcontextprotocol/server-redis', args: () => ['redis://127.0.0.1:1'] },
};

function withTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${TIMEOUT_MS / 1000} s`)), TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// Installs one package into its own folder (so installs don't prune each other); returns its dir.
// --ignore-scripts: no install step may download anything (e.g. puppeteer's browser).
function install(scratch: string, name: string, pkg: string): string {
  const dir = join(scratch, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), '{ "private": true }\n');
  execFileSync('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error', pkg], {
    cwd: dir,
    env: { ...process.env, PUPPETEER_SKIP_DOWNLOAD: '1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return join(dir, 'node_modules', pkg);
}

async function listTools(name: string, spec: Spec, scratch: string, pkgDir: string): Promise<Tool[]> {
  const manifest = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
  const bin: string | undefined = typeof manifest.bin === 'string' ? manifest.bin : Object.values(manifest.bin ?? {})[0];
  if (!bin) throw new Error('package.json has no bin');
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(pkgDir, bin), ...(spec.args?.(scratch) ?? [])],
    env: spec.env?.(scratch) ?? {}, // added to the SDK's minimal default environment (PATH, HOME, ...)
    cwd: scratch,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-20_000)));
  const client = new Client({ name: 'capture-tool-lists', version: '1.0.0' });
  try {
    return await withTimeout(
      (async () => {
        await client.connect(transport);
        const tools: Tool[] = [];
        let cursor: string | undefined;
        do {
          const page = await client.listTools(cursor ? { cursor } : {});
          tools.push(...page.tools);
          cursor = page.nextCursor;
        } while (cursor);
        return tools;
      })(),
      name,
    );
  } catch (error) {
    const message = (error as Error).message.replace(/\s+/g, ' ').slice(0, 200);
    const lastLine = stderr
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith('at '))
      .pop();
    throw new Error(lastLine ? `${message} (last server stderr line: ${lastLine.slice(0, 200)})` : message, { cause: error });
  } finally {
    const pid = transport.pid;
    await client.close().catch(() => {});
    try {
      if (pid) process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

type Captured = { package: string; version: string; tools: { name: string; description: string; inputSchema: unknown }[] };
const scratch = mkdtempSync(join(tmpdir(), 'mcp-tool-lists-'));
const servers: Record<string, Captured> = {};
const failures: string[] = [];
try {
  // Install everything first (one at a time), then start the servers in parallel, each with its own 60 s.
  const installed = new Map<string, string>();
  for (const [name, spec] of Object.entries(SERVERS)) {
    try {
      installed.set(name, install(scratch, name, spec.pkg));
    } catch (error) {
      failures.push(
        `${name} (${spec.pkg}): npm install failed: ${String((error as { stderr?: unknown }).stderr ?? error)
          .trim()
          .slice(0, 300)}`,
      );
    }
  }
  const names = [...installed.keys()];
  const results = await Promise.allSettled(names.map((name) => listTools(name, SERVERS[name]!, scratch, installed.get(name)!)));
  names.forEach((name, i) => {
    const spec = SERVERS[name]!;
    const result = results[i]!;
    if (result.status === 'rejected') {
      failures.push(`${name} (${spec.pkg}): ${(result.reason as Error).message}`);
      return;
    }
    const version: string = JSON.parse(readFileSync(join(installed.get(name)!, 'package.json'), 'utf8')).version;
    const tools = result.value.map((t) => ({ name: t.name, description: t.description ?? '', inputSchema: t.inputSchema }));
    servers[name] = { package: spec.pkg, version, tools };
  });
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

const sdkVersion = JSON.parse(readFileSync('node_modules/@modelcontextprotocol/sdk/package.json', 'utf8')).version;
const capturedWith = [
  `@modelcontextprotocol/sdk@${sdkVersion} client`,
  ...Object.values(servers).map((s) => `${s.package}@${s.version}`),
].join(', ');
writeFileSync(OUT, JSON.stringify({ capturedWith, servers }, null, 2) + '\n');

let total = 0;
for (const [name, s] of Object.entries(servers)) {
  total += s.tools.length;
  console.log(`${name.padEnd(20)} ${String(s.tools.length).padStart(3)} tools  ${s.package}@${s.version}`);
}
for (const failure of failures) console.log(`FAILED ${failure}`);
console.log(`${Object.keys(servers).length} servers, ${total} tools -> ${OUT}`);

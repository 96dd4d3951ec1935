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
const SERVERS: Record<string, Spec> = {
  everything: { pkg: '@modelcontextprotocol/server-everything', args: () => ['stdio'] },
  memory: { pkg: '@modelcontextprotocol/server-memory', env: (s) => ({ MEMORY_FILE_PATH: join(s, 'memory.jsonl') }) },
  filesystem: { pkg: '@modelcontextprotocol/server-filesystem', args: (s) => [fsRoot(s)] },
  github: { pkg: '@modelcontextprotocol/server-github', env: () => ({ GITHUB_PERSONAL_ACCESS_TOKEN: 'dummy' }) },
  slack: { pkg: '@modelcontextprotocol/server-slack', env: () => ({ SLACK_BOT_TOKEN: 'xoxb-dummy', SLACK_TEAM_ID: 'T000' }) },
  postgres: { pkg: '@modelcontextprotocol/server-postgres', args: () => ['postgresql://127.0.0.1:1/none'] },
  gitlab: { pkg: '@modelcontextprotocol/server-gitlab', env: () => ({ GITLAB_PERSONAL_ACCESS_TOKEN: 'dummy', GITLAB_API_URL: 'http://127.0.0.1:1/api/v4' }) },
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

async function listTools(name: string, spec: Spec, scratch: string): Promise<{ version: string; tools: Tool[] }> {
  const pkgDir = install(scratch, name, spec.pkg);
  const manifest = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
  const bin: string | undefined = typeof manifest.bin === 'string' ? manifest.bin : Object.values(manifest.bin ?? {})[0];
  if (!bin) throw new Error('package.json has no bin');
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(pkgDir, bin), ...(spec.args?.(scratch) ?? [])],
    env: spec.env?.(scratch) ?? {},
    cwd: scratch,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)));
  const client = new Client({ name: 'capture-tool-lists', version: '1.0.0' });
  try {
    const tools: Tool[] = [];
    await withTimeout(
      (async () => {
        await client.connect(transport);
        let cursor: string | undefined;
        do {
          const page = await client.listTools(cursor ? { cursor } : {});
          tools.push(...page.tools);
          cursor = page.nextCursor;
        } while (cursor);
      })(),
      name,
    );
    return { version: manifest.version, tools };
  } catch (error) {
    throw new Error(`${(error as Error).message}${stderr.trim() ? `\n  server stderr: ${stderr.trim()}` : ''}`);
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

const scratch = mkdtempSync(join(tmpdir(), 'mcp-tool-lists-'));
const servers: Record<string, { package: string; version: string; tools: { name: string; description: string; inputSchema: unknown }[] }> = {};
const failures: string[] = [];
try {
  // Installs and servers run in parallel; each server gets its own 60 s budget.
  const results = await Promise.allSettled(Object.entries(SERVERS).map(([name, spec]) => listTools(name, spec, scratch)));
  Object.keys(SERVERS).forEach((name, i) => {
    const spec = SERVERS[name]!;
    const result = results[i]!;
    if (result.status === 'rejected') {
      failures.push(`${name} (${spec.pkg}): ${(result.reason as Error).message}`);
      return;
    }
    const { version, tools } = result.value;
    servers[name] = {
      package: spec.pkg,
      version,
      tools: tools.map((t) => ({ name: t.name, description: t.description ?? '', inputSchema: t.inputSchema })),
    };
  });
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

const sdkVersion = JSON.parse(readFileSync('node_modules/@modelcontextprotocol/sdk/package.json', 'utf8')).version;
const capturedWith = [`@modelcontextprotocol/sdk@${sdkVersion} client`, ...Object.values(servers).map((s) => `${s.package}@${s.version}`)].join(', ');
writeFileSync(OUT, JSON.stringify({ capturedWith, servers }, null, 2) + '\n');

let total = 0;
for (const [name, s] of Object.entries(servers)) {
  total += s.tools.length;
  console.log(`${name.padEnd(20)} ${String(s.tools.length).padStart(3)} tools  ${s.package}@${s.version}`);
}
for (const failure of failures) console.log(`FAILED ${failure}`);
console.log(`${Object.keys(servers).length} servers, ${total} tools -> ${OUT}`);

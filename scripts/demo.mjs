// `npm run demo`: runs examples/demo.py in the sandbox with a real MCP server proxied
// (@modelcontextprotocol/server-memory from node_modules), through the built CLI.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const dir = mkdtempSync(join(tmpdir(), 'cem-demo-'));
const config = {
  stateDir: join(dir, 'state'),
  servers: {
    memory: {
      command: process.execPath,
      args: [resolve('node_modules/@modelcontextprotocol/server-memory/dist/index.js')],
      env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') },
      description: 'Knowledge graph memory',
    },
  },
  sandbox: { image: process.env.CEM_TEST_IMAGE ?? 'python:3.14-slim', backend: process.env.CEM_DEMO_BACKEND ?? 'auto' },
};
writeFileSync(join(dir, 'config.json'), JSON.stringify(config, null, 2));
const result = spawnSync(process.execPath, ['dist/cli.js', 'run', '--config', join(dir, 'config.json'), 'examples/demo.py'], {
  stdio: 'inherit',
});
console.error(`\nSandbox: ${sandboxUsed(join(dir, 'state', 'runs.jsonl'))}`);
console.error(`Run log (the audit record): ${join(dir, 'state', 'runs.jsonl')}`);
if (result.status !== 0) rmSync(dir, { recursive: true, force: true });
process.exit(result.status ?? 1);

/** Where the run ran, as the run log recorded it. */
function sandboxUsed(file) {
  let sandbox;
  try {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (line.includes('"run-end"')) sandbox = JSON.parse(line).sandbox ?? sandbox;
    }
  } catch {
    return 'unknown (no run log)';
  }
  if (!sandbox) return 'none started';
  if (sandbox.isolation === 'wasm') return 'WebAssembly (Pyodide in Deno); for full isolation and packages, install Podman';
  return `a ${sandbox.runtime} container${sandbox.isolation === 'gVisor' ? ' in gVisor' : ''}`;
}

// The code each new sandbox interpreter runs before the first run: it loads the MCP runtime
// (mcp_runtime.py, beside this module in src/ and beside the bundle in dist/) as the module
// `mcp.runtime` and installs its names and one proxy per enabled server. When the servers
// change while the bridge runs, an interpreter started before runs the update instead.
import { readFileSync } from 'node:fs';

let cached: string | undefined;

function runtimeSource(): string {
  cached ??= readFileSync(new URL('./mcp_runtime.py', import.meta.url), 'utf8');
  return cached;
}

export interface PreludeServer {
  name: string;
  alias: string;
  description: string;
}

/** JSON string literals are valid Python string literals, so JSON carries the data across. */
export function preludeCode(servers: readonly PreludeServer[]): string {
  return [
    'import sys as _cem_sys, types as _cem_types',
    '_cem_module = _cem_types.ModuleType("mcp.runtime")',
    '_cem_sys.modules["mcp.runtime"] = _cem_module',
    `exec(compile(${JSON.stringify(runtimeSource())}, "<mcp.runtime>", "exec"), _cem_module.__dict__)`,
    `_cem_module._install(__import__("json").loads(${JSON.stringify(JSON.stringify(servers))}), globals())`,
    'del _cem_sys, _cem_types, _cem_module',
  ].join('\n');
}

/** What an interpreter that ran an older prelude runs to learn the new server list (its variables stay). */
export function preludeUpdateCode(servers: readonly PreludeServer[]): string {
  return `__import__("sys").modules["mcp.runtime"]._update_servers(__import__("json").loads(${JSON.stringify(JSON.stringify(servers))}), globals())`;
}

// The Python an agent writes for a tool, as the Tools view shows and copies it: the same aliases
// the sandbox uses (catalog/aliases.ts), `await mcp_<server>.<tool>(required=...)`. No `vscode`.
import { pythonName, uniqueAliases } from '../../bridge/catalog/aliases.ts';

/** Aliases of servers in configuration order, as the bridge's catalog makes them. */
export function serverAliases(names: readonly string[]): Map<string, string> {
  const aliases = uniqueAliases(names);
  return new Map(names.map((name, i) => [name, aliases[i]!]));
}

/** Aliases of one server's tools, in the order the server listed them. */
export function toolAliases(names: readonly string[]): Map<string, string> {
  const aliases = uniqueAliases(names);
  return new Map(names.map((name, i) => [name, aliases[i]!]));
}

/** The required parameters of a JSON schema that are Python names (others go through call_tool). */
function requiredParams(inputSchema: unknown): string[] {
  if (!inputSchema || typeof inputSchema !== 'object') return [];
  const required = (inputSchema as { required?: unknown }).required;
  if (!Array.isArray(required)) return [];
  return required
    .filter((p): p is string => typeof p === 'string' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(p) && pythonName(p) === p.toLowerCase())
    .slice(0, 20);
}

/** `await mcp_fs.read_file(path=...)`: `...` marks each required argument to fill in. */
export function pythonCall(serverAlias: string, toolAlias: string, inputSchema?: unknown): string {
  const args = requiredParams(inputSchema).map((p) => `${p}=...`);
  return `await mcp_${serverAlias}.${toolAlias}(${args.join(', ')})`;
}

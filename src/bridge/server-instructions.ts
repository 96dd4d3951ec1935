// The bridge's MCP `instructions`: what a client may add to the model's context once, beside
// run_python's listing. The proxied servers' names and one-line descriptions go here, not in
// the listing, so that the listing stays the same size whatever the servers; capped all the same.
import type { ServerRecord } from './catalog/catalog.ts';
import { clip } from '../shared/clip.ts';

export const MAX_INSTRUCTIONS_CHARS = 1500;
const MAX_LINE_CHARS = 120;
const TOOL_NAMES_SHOWN = 4;

const HEAD =
  'run_python runs Python in a sandbox where these MCP servers are async functions: ' +
  'await mcp_<server>.<tool>(**kwargs). Find tools with await search_tool_docs("what you need") (hits carry signatures; [] means no server does it); ' +
  'full docs: await query_tool_docs(server, tool, detail="full"). Files written to /work/out and open matplotlib figures come back with the result. ' +
  "Servers' resources and prompts: await list_resources(server), read_resource(server, uri), list_prompts(server), get_prompt(server, name, args). " +
  'An overview of the sandbox and its servers: capability_summary().';

/** The first line (or sentence) of a description, cut to fit one line. */
function oneLine(text: string): string {
  const line = text.trim().split('\n')[0]!.trim();
  const sentence = /^(.{20,}?[.!?])\s/.exec(line)?.[1] ?? line;
  return clip(sentence, MAX_LINE_CHARS);
}

function serverLine(record: ServerRecord, allowed: boolean): string {
  const name = `- mcp_${record.alias}`;
  // A server the user has not allowed: its name only (its words are the workspace's, not the user's).
  if (!allowed) return `${name}: needs the user's consent`;
  if (record.description) return `${name}: ${oneLine(record.description)}`;
  const tools = record.tools ?? [];
  if (tools.length === 0) return name;
  const names = tools
    .slice(0, TOOL_NAMES_SHOWN)
    .map((t) => t.alias)
    .join(', ');
  return `${name}: ${tools.length} tools (${names}${tools.length > TOOL_NAMES_SHOWN ? ', ...' : ''})`;
}

/** Characters of the installed packages' line. */
export const MAX_PACKAGES_LINE_CHARS = 300;

/** "Python packages installed: numpy, pandas (no pip)." cut to fit its line; empty without packages. */
export function packagesLine(installed: readonly string[]): string {
  if (installed.length === 0) return '';
  const head = '\nPython packages installed besides the standard library: ';
  let names = '';
  for (const [i, name] of installed.entries()) {
    const next = `${i > 0 ? ', ' : ''}${name}`;
    if (head.length + names.length + next.length + 30 > MAX_PACKAGES_LINE_CHARS) {
      names += ` and ${installed.length - i} more`;
      break;
    }
    names += next;
  }
  return `${head}${names} (no pip).`;
}

export function serverInstructions(
  records: readonly ServerRecord[],
  allowed: (server: string) => boolean,
  installed: readonly string[] = [],
  network = '',
): string {
  // `network`: sandbox.network in one line (config/network-summary.ts), '' without a network.
  const head = HEAD + packagesLine(installed) + (network ? `\n${network}` : '');
  if (records.length === 0) return `${head} No MCP servers are configured.`;
  let text = `${head}\nServers:`;
  for (const [i, record] of records.entries()) {
    const line = `\n${serverLine(record, allowed(record.name))}`;
    const rest = records.length - i;
    const more = `\n... ${rest} more: discovered_servers()`;
    // Keep room for the "more" line unless this is the last server.
    if (text.length + line.length + (rest > 1 ? `\n... ${rest - 1} more: discovered_servers()`.length : 0) > MAX_INSTRUCTIONS_CHARS) {
      return text + more;
    }
    text += line;
  }
  return text;
}

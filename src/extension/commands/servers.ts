// Commands for a person to manage the proxied servers: add (stdio or HTTP, step by step),
// edit, enable/disable, remove, set a secret, and import from mcp.json files.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseJsonc } from 'jsonc-parser';
import * as vscode from 'vscode';
import { SERVER_NAME, serverSchema } from '../../config/schema.ts';
import { describeIssues } from '../../config/load.ts';
import { splitCommandLine } from '../../shared/command-line.ts';
import { startsThisBridge } from '../../bridge/proxy/transports.ts';
import type { SecretKind, ServerSecrets } from '../settings/secrets.ts';
import { SECTION, writeServer } from '../settings/settings.ts';

function entries(): Record<string, Record<string, unknown>> {
  return vscode.workspace.getConfiguration(SECTION).get<Record<string, Record<string, unknown>>>('servers') ?? {};
}

/** The ids of the `${input:ID}` variables an entry uses, in order of first use. */
function inputIds(entry: unknown): string[] {
  const ids = new Set<string>();
  for (const match of JSON.stringify(entry ?? {}).matchAll(/\$\{input:([^{}]+)\}/g)) ids.add(match[1]!);
  return [...ids];
}

async function pickServer(arg: unknown, placeHolder: string): Promise<string | undefined> {
  if (typeof arg === 'string') return arg;
  if (arg && typeof arg === 'object' && 'name' in arg && typeof arg.name === 'string') return arg.name;
  const names = Object.keys(entries());
  if (names.length === 0) {
    void vscode.window.showInformationMessage('No servers are configured yet.');
    return undefined;
  }
  return vscode.window.showQuickPick(names, { placeHolder });
}

async function askName(initial = ''): Promise<string | undefined> {
  const taken = new Set(Object.keys(entries()));
  return vscode.window.showInputBox({
    title: 'Server name',
    prompt: 'Becomes mcp_<name> in Python',
    value: initial,
    validateInput: (value) =>
      !SERVER_NAME.test(value)
        ? 'Letters, digits, "_", "-" and "."; start with a letter or digit'
        : taken.has(value) && value !== initial
          ? 'A server with this name exists'
          : undefined,
  });
}

export function registerServerCommands(context: vscode.ExtensionContext, secrets: ServerSecrets): void {
  const register = (id: string, fn: (...args: unknown[]) => Promise<unknown>) =>
    context.subscriptions.push(vscode.commands.registerCommand(`codeExecutionMode.${id}`, fn));

  register('addServer', async () => {
    const kind = await vscode.window.showQuickPick(
      [
        { label: 'stdio', description: 'a command that speaks MCP on stdin/stdout', value: 'stdio' },
        { label: 'HTTP', description: 'a Streamable HTTP (or SSE) URL', value: 'http' },
      ],
      { title: 'Add MCP server (1/3): transport' },
    );
    if (!kind) return;
    let entry: Record<string, unknown>;
    if (kind.value === 'stdio') {
      const line = await vscode.window.showInputBox({
        title: 'Add MCP server (2/3): command',
        prompt: 'e.g. npx -y @modelcontextprotocol/server-memory',
        validateInput: (v) => (v.trim() ? undefined : 'Enter a command'),
      });
      if (!line) return;
      const [command, ...args] = splitCommandLine(line);
      entry = { command, args };
    } else {
      const url = await vscode.window.showInputBox({
        title: 'Add MCP server (2/3): URL',
        prompt: 'e.g. http://127.0.0.1:8931/mcp',
        validateInput: (v) => (/^https?:\/\/\S+$/.test(v) ? undefined : 'Enter an http(s) URL'),
      });
      if (!url) return;
      entry = { url };
    }
    if (startsThisBridge(serverSchema.parse(entry))) {
      void vscode.window.showErrorMessage('That server is Code Execution Mode itself; proxying it would recurse.');
      return;
    }
    const name = await askName();
    if (!name) return;
    const description = await vscode.window.showInputBox({
      title: 'Add MCP server (3/3): description (optional)',
      prompt: 'Tells the agent what the server is for',
    });
    if (description) entry.description = description;
    await writeServer(name, entry);
    const secret = await vscode.window.showInformationMessage(`Server "${name}" added.`, 'Add a Secret (token, API key)');
    if (secret) await vscode.commands.executeCommand('codeExecutionMode.setServerSecret', name);
  });

  register('editServer', async (arg) => {
    const name = await pickServer(arg, 'Server to edit');
    if (!name) return;
    const current = entries()[name];
    const text = await vscode.window.showInputBox({
      title: `Edit server "${name}" (JSON)`,
      value: JSON.stringify(current),
      validateInput: (value) => {
        try {
          const parsed = serverSchema.safeParse(JSON.parse(value));
          return parsed.success ? undefined : describeIssues(parsed.error, '', { whole: 'entry', separator: '; ' });
        } catch (error) {
          return (error as Error).message;
        }
      },
    });
    if (text) await writeServer(name, JSON.parse(text) as Record<string, unknown>);
  });

  const setEnabled = (enabled: boolean) => async (arg: unknown) => {
    const name = await pickServer(arg, enabled ? 'Server to enable' : 'Server to disable');
    if (!name) return;
    const current = entries()[name];
    if (current) await writeServer(name, { ...current, enabled });
  };
  register('enableServer', setEnabled(true));
  register('disableServer', setEnabled(false));

  register('removeServer', async (arg) => {
    const name = await pickServer(arg, 'Server to remove');
    if (!name) return;
    const sure = await vscode.window.showWarningMessage(`Remove server "${name}" and its secrets?`, { modal: true }, 'Remove');
    if (sure !== 'Remove') return;
    await writeServer(name, undefined);
    await secrets.removeServer(name);
  });

  register('setServerSecret', async (arg) => {
    const name = await pickServer(arg, 'Server the secret is for');
    if (!name) return;
    const entry = entries()[name] ?? {};
    const isHttp = 'url' in entry;
    const plain: SecretKind = isHttp ? 'headers' : 'env';
    let kind: SecretKind = plain;
    let key: string | undefined;
    // An entry with `${input:ID}` (as imported from mcp.json) needs those values first.
    const inputs = inputIds(entry);
    if (inputs.length > 0) {
      const stored = new Set(
        secrets
          .names(name)
          .filter((e) => e.kind === 'inputs')
          .map((e) => e.name),
      );
      const pick = await vscode.window.showQuickPick(
        [
          ...inputs.map((id) => ({
            label: `\${input:${id}}`,
            description: stored.has(id) ? 'stored (replace)' : 'no value yet',
            secret: 'inputs' as SecretKind,
            id,
          })),
          {
            label: isHttp ? 'An HTTP header' : 'An environment variable',
            description: isHttp ? 'e.g. Authorization' : 'e.g. GITHUB_PERSONAL_ACCESS_TOKEN',
            secret: plain,
            id: undefined,
          },
        ],
        { title: `Secret for "${name}"`, placeHolder: 'A value the entry refers to, or a new variable' },
      );
      if (!pick) return;
      kind = pick.secret;
      key = pick.id;
    }
    key ??= await vscode.window.showInputBox({
      title: `Secret for "${name}": ${isHttp ? 'header name' : 'environment variable'}`,
      value: isHttp ? 'Authorization' : '',
      prompt: isHttp ? 'Sent as this HTTP header' : 'e.g. GITHUB_PERSONAL_ACCESS_TOKEN',
      validateInput: (v) => (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(v) ? undefined : 'A plain name'),
    });
    if (!key) return;
    const shown = kind === 'inputs' ? `\${input:${key}}` : key;
    const value = await vscode.window.showInputBox({
      title: `Value of ${shown}`,
      password: true,
      prompt: "Kept in VS Code's secret storage, given only to this server",
    });
    if (value === undefined) return;
    await secrets.set(name, kind, key, value);
    void vscode.window.showInformationMessage(`Secret ${shown} stored for "${name}".`);
  });

  register('importServers', async () => {
    const files = [
      ...(vscode.workspace.workspaceFolders ?? []).map((f) => join(f.uri.fsPath, '.vscode', 'mcp.json')),
      join(context.globalStorageUri.fsPath, '..', '..', 'mcp.json'),
    ];
    const found: Array<vscode.QuickPickItem & { name: string; entry: Record<string, unknown> }> = [];
    for (const file of files) {
      let parsed: unknown;
      try {
        parsed = parseJsonc(await readFile(file, 'utf8'));
      } catch {
        continue;
      }
      const servers = (parsed && typeof parsed === 'object' && 'servers' in parsed ? parsed.servers : undefined) as
        Record<string, Record<string, unknown>> | undefined;
      for (const [name, entry] of Object.entries(servers ?? {})) {
        const valid = serverSchema.safeParse(entry);
        if (!valid.success || startsThisBridge(valid.data) || !SERVER_NAME.test(name)) continue;
        const usesInputs = JSON.stringify(entry).includes('${input:');
        found.push({
          label: name,
          description: file,
          detail: usesInputs ? 'uses ${input:...} values: set them as secrets after import' : undefined,
          name,
          entry,
          picked: !(name in entries()),
        });
      }
    }
    if (found.length === 0) {
      void vscode.window.showInformationMessage("No servers found in the workspace's or your mcp.json.");
      return;
    }
    const chosen = await vscode.window.showQuickPick(found, { canPickMany: true, title: 'Servers to put behind Code Execution Mode' });
    for (const item of chosen ?? []) await writeServer(item.name, item.entry);
    if (!chosen?.length) return;
    const needInputs = chosen.find((item) => inputIds(item.entry).length > 0);
    const done = `Imported ${chosen.length} server(s). You may now remove them from mcp.json so the agent sees only run_python.`;
    if (!needInputs) return void vscode.window.showInformationMessage(done);
    const set = await vscode.window.showInformationMessage(
      `${done} "${needInputs.name}" uses \${input:...} values: store them as secrets.`,
      'Set Values',
    );
    if (set) await vscode.commands.executeCommand('codeExecutionMode.setServerSecret', needInputs.name);
  });
}

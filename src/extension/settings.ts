// The extension's settings as the bridge's configuration. Each server entry is validated on
// its own, so one broken entry is reported and skipped while the others keep working.
import * as vscode from 'vscode';
import { describeIssues } from '../config/load.ts';
import { proxyConfigSchema, sandboxConfigSchema, serverSchema, SERVER_NAME, type Config, type ServerConfig } from '../config/schema.ts';

export const SECTION = 'codeExecutionMode';

export interface SettingsResult {
  config: Config;
  /** Problems to show: invalid entries (skipped) and settings ignored for trust. */
  problems: string[];
  /** Every configured server, valid or not, enabled or not (for the Tools view). */
  entries: Record<string, unknown>;
}

// `pull` is not a setting: in VS Code the image is pulled when the person clicks "Pull".
const SANDBOX_KEYS = [
  'runtime',
  'image',
  'memory',
  'cpus',
  'pids',
  'timeoutSeconds',
  'maxTimeoutSeconds',
  'idleSeconds',
  'maxSessions',
  'extraRunArgs',
  'podmanPath',
  'dockerPath',
] as const;

/** What `${workspaceFolder}` means for the servers: the first folder, when it is on disk. */
function workspaceFolder(): string | undefined {
  const folder = vscode.workspace.workspaceFolders?.[0];
  return folder?.uri.scheme === 'file' ? folder.uri.fsPath : undefined;
}

export function readSettings(stateDir: string): SettingsResult {
  const settings = vscode.workspace.getConfiguration(SECTION);
  const problems: string[] = [];
  if (!vscode.workspace.isTrusted) {
    const workspaceServers = settings.inspect('servers')?.workspaceValue;
    if (workspaceServers && Object.keys(workspaceServers).length > 0) {
      problems.push('This workspace is not trusted: servers from its settings are not started. Trust the workspace to use them.');
    }
  }
  const entries = (settings.get<Record<string, unknown>>('servers') ?? {}) as Record<string, unknown>;
  const servers: Record<string, ServerConfig> = {};
  for (const [name, raw] of Object.entries(entries)) {
    if (!SERVER_NAME.test(name)) {
      problems.push(`codeExecutionMode.servers: "${name}" is not a valid server name (letters, digits, "_", "-", "."); skipped.`);
      continue;
    }
    const parsed = serverSchema.safeParse(raw);
    if (parsed.success) servers[name] = parsed.data;
    else problems.push(`Skipped server "${name}":\n${describeIssues(parsed.error, `codeExecutionMode.servers.${name}`)}`);
  }
  const rawSandbox: Record<string, unknown> = {};
  for (const key of SANDBOX_KEYS) {
    const value = settings.get(`sandbox.${key}`);
    // An empty path setting means "find it": on PATH, then in the usual install folders.
    if (value !== undefined && value !== '') rawSandbox[key] = value;
  }
  let sandbox = sandboxConfigSchema.safeParse(rawSandbox);
  if (!sandbox.success) {
    problems.push(`Sandbox settings are invalid, defaults are used:\n${describeIssues(sandbox.error, 'codeExecutionMode.sandbox')}`);
    sandbox = sandboxConfigSchema.safeParse({});
  }
  const folder = workspaceFolder();
  return {
    config: { servers, sandbox: sandbox.data!, proxy: proxyConfigSchema.parse({}), stateDir, ...(folder ? { workspaceFolder: folder } : {}) },
    problems,
    entries,
  };
}

/** Replaces one server's entry (or removes it with `undefined`) in the user settings. */
export async function writeServer(name: string, entry: Record<string, unknown> | undefined): Promise<void> {
  const settings = vscode.workspace.getConfiguration(SECTION);
  const inspected = settings.inspect<Record<string, unknown>>('servers');
  // Write where the entry lives; new entries go to the user settings.
  const inWorkspace = inspected?.workspaceValue && name in inspected.workspaceValue;
  const target = inWorkspace ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
  const current = { ...((inWorkspace ? inspected?.workspaceValue : inspected?.globalValue) ?? {}) };
  if (entry === undefined) delete current[name];
  else current[name] = entry;
  await settings.update('servers', current, target);
}

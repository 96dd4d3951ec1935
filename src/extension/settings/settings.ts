// The extension's settings as the bridge's configuration. Each server entry is validated on
// its own, so one broken entry is reported and skipped while the others keep working. What a
// trusted workspace defines that could run something or take more of the machine (servers,
// every sandbox setting: image, arguments, limits...) waits for the user's consent: servers go
// to the bridge gated by the hash of their definition (the bridge reads the decisions live),
// sandbox values are replaced by the user's until allowed.
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { z } from 'zod';
import { escapeUnseen } from '../../shared/shown-text.ts';
import { WORKSPACE_SNIPPETS_PATH } from '../../state/snippets.ts';
import { describeIssues } from '../../config/load.ts';
import {
  MAX_WORKSPACE_FOLDERS,
  proxyConfigSchema,
  runLogConfigSchema,
  sandboxConfigSchema,
  serverSchema,
  SERVER_NAME,
  type Config,
  type ServerConfig,
} from '../../config/schema.ts';
import { workspaceTargets } from '../../sandbox/index.ts';
import { NOT_HASHED, sandboxSetting, serverConsentItem, type ConsentItem, type ConsentLocation, type Decision } from './consent-items.ts';
import { entryScope, PROXY_SETTING_KEYS, RUN_LOG_SETTING_KEYS, SANDBOX_SETTING_KEYS, SECTION, settingValue } from './trusted-settings.ts';
import { nestedSandboxSettings } from './manifest-settings.ts';

export { SECTION } from './trusted-settings.ts';

export interface SettingsResult {
  config: Config;
  /** Problems to show: invalid entries (skipped) and settings ignored for trust. */
  problems: string[];
  /** Every configured server, valid or not, enabled or not (for the Tools view). */
  entries: Record<string, unknown>;
  /** What the workspace defines that needs consent (allowed or not), servers first. */
  consent: ConsentItem[];
}

/** Where decisions are read: by the hash of a definition, and the files the bridge shares. */
export interface ConsentSource {
  decision(hash: string): Decision | undefined;
  decisionsFile: string;
  requestsFile: string;
}

/** Where a workspace scope's settings live, for the hash and for people. */
function locationOf(scope: ConsentLocation['scope']): ConsentLocation {
  const file = vscode.workspace.workspaceFile;
  if (scope === 'workspace' && file) {
    return { scope, id: file.toString(), label: file.scheme === 'file' ? `the workspace file ${file.fsPath}` : 'the workspace settings' };
  }
  const folder = vscode.workspace.workspaceFolders?.[0];
  const settings = folder && vscode.Uri.joinPath(folder.uri, '.vscode', 'settings.json');
  return {
    scope,
    id: settings?.toString() ?? scope,
    label: settings
      ? `the folder settings ${settings.scheme === 'file' ? settings.fsPath : settings.toString()}`
      : 'the workspace settings',
  };
}

/** What `${workspaceFolder}` means for the servers: the first folder, when it is on disk. */
function workspaceFolder(): string | undefined {
  const folder = vscode.workspace.workspaceFolders?.[0];
  return folder?.uri.scheme === 'file' ? folder.uri.fsPath : undefined;
}

/** The folders a workspace mount takes: every folder of the workspace that is on disk, in order. */
function foldersOnDisk(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
}

export function readSettings(stateDir: string, consent: ConsentSource): SettingsResult {
  const settings = vscode.workspace.getConfiguration(SECTION);
  const trusted = vscode.workspace.isTrusted;
  const problems: string[] = [];
  const ignored: string[] = [];
  // In an untrusted workspace, a value from the workspace's own settings never applies.
  const read = <T>(key: string): T | undefined => {
    const { value, ignored: set } = settingValue(settings.inspect<T>(key), trusted, settings.get<T>(key));
    if (set) ignored.push(key);
    return value;
  };
  const entries = read<Record<string, unknown>>('servers') ?? {};
  const servers: Record<string, ServerConfig> = {};
  const items: ConsentItem[] = [];
  const gated: Record<string, string> = {};
  const folder = workspaceFolder();
  const mountable = foldersOnDisk().slice(0, MAX_WORKSPACE_FOLDERS);
  const targets = workspaceTargets(mountable);
  const inspectedServers = trusted ? settings.inspect<Record<string, unknown>>('servers') : undefined;
  for (const [name, raw] of Object.entries(entries)) {
    if (!SERVER_NAME.test(name)) {
      problems.push(`codeExecutionMode.servers: "${name}" is not a valid server name (letters, digits, "_", "-", "."); skipped.`);
      continue;
    }
    const parsed = serverSchema.safeParse(raw);
    if (!parsed.success) {
      problems.push(`Skipped server "${name}":\n${describeIssues(parsed.error, `codeExecutionMode.servers.${name}`)}`);
      continue;
    }
    servers[name] = parsed.data;
    const scope = entryScope(inspectedServers, name, NOT_HASHED);
    if (scope && parsed.data.enabled) {
      const location = locationOf(scope);
      const overUser = inspectedServers?.globalValue !== undefined && Object.hasOwn(inspectedServers.globalValue, name);
      const item = serverConsentItem(
        name,
        raw as Record<string, unknown>,
        overUser ? { ...location, label: `${location.label} (over your user settings' entry)` } : location,
        folder,
      );
      items.push(item);
      gated[name] = item.hash;
    }
  }
  const rawSandbox: Record<string, unknown> = {};
  for (const key of SANDBOX_SETTING_KEYS) {
    const resolved = settings.get(`sandbox.${key}`);
    const setting = sandboxSetting(key, settings.inspect(`sandbox.${key}`), trusted, resolved, locationOf, (hash) =>
      consent.decision(hash),
    );
    if (setting.ignored) ignored.push(`sandbox.${key}`);
    const { value, item } = setting;
    if (item) {
      if (key === 'workspaceAccess' && resolved === 'read-only' && mountable.length > 0)
        item.facts.push(`sandboxed code can read ${mountable.map((dir, i) => `${escapeUnseen(dir)} (at ${targets[i]})`).join(', ')}`);
      if (key === 'ociRuntime')
        item.facts.push("the OCI runtime is a program that starts every sandbox container, with the container engine's privileges");
      if (key === 'packages' || key === 'pipIndexUrl')
        item.facts.push(
          "packages are downloaded and installed into the sandbox image when you build it: their install scripts run during the build, with a network (this machine's, for an index on this machine), and their code then runs in the sandbox",
        );
      if (key === 'network.allow')
        item.facts.push("sandboxed code can connect to these hosts (through the bridge's proxy) and send them whatever it holds");
      if (key === 'network.ask') item.facts.push('sandboxed code can ask you to let it reach any host');
      items.push(item);
    }
    // An empty path setting means "find it": on PATH, then in the usual install folders.
    if (value !== undefined && value !== '') rawSandbox[key] = value;
  }
  // The workspace mount: every folder on disk (one at /workspace, several at /workspace/<name>),
  // only in a trusted workspace (whatever scope set it).
  const access = rawSandbox.workspaceAccess;
  delete rawSandbox.workspaceAccess;
  if (access === 'read-only') {
    if (!trusted)
      problems.push(
        'This workspace is not trusted: it is not mounted in the sandbox (codeExecutionMode.sandbox.workspaceAccess). Trust the workspace to use it.',
      );
    else if (mountable.length === 0)
      problems.push('codeExecutionMode.sandbox.workspaceAccess: there is no workspace folder on disk to mount.');
    else {
      rawSandbox.workspace = { path: mountable.length === 1 ? mountable[0] : mountable, access: 'read-only' };
      const total = foldersOnDisk().length;
      if (total > mountable.length)
        problems.push(
          `codeExecutionMode.sandbox.workspaceAccess: the sandbox mounts at most ${MAX_WORKSPACE_FOLDERS} folders; the other ${total - mountable.length} are left out.`,
        );
    }
  } else if (access !== undefined && access !== 'none') {
    problems.push(`codeExecutionMode.sandbox.workspaceAccess: ${JSON.stringify(access)} is not "none" or "read-only"; nothing is mounted.`);
  }
  let sandbox = sandboxConfigSchema.safeParse(nestedSandboxSettings(rawSandbox));
  if (!sandbox.success) {
    problems.push(`Sandbox settings are invalid, defaults are used:\n${describeIssues(sandbox.error, 'codeExecutionMode.sandbox')}`);
    sandbox = sandboxConfigSchema.safeParse({});
  }
  const proxy = limitSettings('proxy', PROXY_SETTING_KEYS, read, proxyConfigSchema, problems);
  const runLog = limitSettings('runLog', RUN_LOG_SETTING_KEYS, read, runLogConfigSchema, problems);
  if (ignored.includes('servers')) {
    problems.push('This workspace is not trusted: servers from its settings are not started. Trust the workspace to use them.');
  }
  const sandboxIgnored = ignored.filter((key) => key.startsWith('sandbox.'));
  if (sandboxIgnored.length > 0) {
    problems.push(
      `This workspace is not trusted: its sandbox settings are ignored (${sandboxIgnored.map((k) => `${SECTION}.${k}`).join(', ')}). Trust the workspace to use them.`,
    );
  }
  const limitsIgnored = ignored.filter((key) => key.startsWith('proxy.') || key.startsWith('runLog.'));
  if (limitsIgnored.length > 0) {
    problems.push(
      `This workspace is not trusted: its settings ${limitsIgnored.map((k) => `${SECTION}.${k}`).join(', ')} are ignored. They are machine settings: set them in your user settings.`,
    );
  }
  return {
    config: {
      servers,
      sandbox: sandbox.data!,
      proxy,
      runLog,
      stateDir,
      ...(folder ? { workspaceFolder: folder } : {}),
      // The workspace's snippets (shared through git) run only in a trusted workspace.
      ...(folder && trusted ? { workspaceSnippetsDir: join(folder, ...WORKSPACE_SNIPPETS_PATH) } : {}),
      consent: { decisionsFile: consent.decisionsFile, requestsFile: consent.requestsFile, servers: gated },
      // VS Code hands the model structuredContent alone when there is one: the text reads better, in fewer tokens.
      structuredResults: false,
    },
    problems,
    entries,
    consent: items,
  };
}

/**
 * The proxy's or the run log's limits from their settings (`<group>.<key>`, machine settings):
 * an invalid value is reported and the defaults are used, as for the sandbox settings.
 */
function limitSettings<T>(
  group: string,
  keys: readonly string[],
  read: <V>(key: string) => V | undefined,
  schema: z.ZodType<T>,
  problems: string[],
): T {
  const raw = Object.fromEntries(
    keys.map((key): [string, unknown] => [key, read<unknown>(`${group}.${key}`)]).filter(([, value]) => value !== undefined),
  );
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  problems.push(`${SECTION}.${group} settings are invalid, defaults are used:\n${describeIssues(parsed.error, `${SECTION}.${group}`)}`);
  return schema.parse({});
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

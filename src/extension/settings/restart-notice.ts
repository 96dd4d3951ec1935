// Says which settings made the bridge restart with a new sandbox (the agent's Python sessions
// lost their variables, and their next run says so), and offers to put the old values back.
import * as vscode from 'vscode';
import { mirroredSettings } from './manifest-settings.ts';
import { SECTION } from './trusted-settings.ts';

/** The values each setting had in the user's and the workspace's settings. */
export type SettingsSnapshot = Map<string, { global: unknown; workspace: unknown }>;

export function settingsSnapshot(): SettingsSnapshot {
  const config = vscode.workspace.getConfiguration();
  const snapshot: SettingsSnapshot = new Map();
  for (const name of Object.keys(mirroredSettings())) {
    const scopes = config.inspect(name);
    snapshot.set(name, { global: scopes?.globalValue, workspace: scopes?.workspaceValue });
  }
  return snapshot;
}

/** `keys`: the configuration keys that changed (config/restart-keys.ts); `before`: the settings before the change. */
export async function showRestartNotice(keys: readonly string[], before: SettingsSnapshot): Promise<void> {
  const settings = Object.entries(mirroredSettings()).flatMap(([name, mirrored]) => (keys.includes(mirrored.config) ? [name] : []));
  const named = settings.length > 0 ? settings.map((name) => name.slice(SECTION.length + 1)) : keys;
  const message = `The sandbox restarted for a settings change (${named.join(', ')}): the agent's Python sessions start fresh, and their next result says so.`;
  if (settings.length === 0) {
    void vscode.window.showInformationMessage(message);
    return;
  }
  if ((await vscode.window.showInformationMessage(message, 'Undo')) !== 'Undo') return;
  const config = vscode.workspace.getConfiguration();
  for (const name of settings) {
    const old = before.get(name);
    const now = config.inspect(name);
    if (!old || !now) continue;
    if (JSON.stringify(now.globalValue) !== JSON.stringify(old.global))
      await config.update(name, old.global, vscode.ConfigurationTarget.Global);
    if (vscode.workspace.workspaceFolders && JSON.stringify(now.workspaceValue) !== JSON.stringify(old.workspace))
      await config.update(name, old.workspace, vscode.ConfigurationTarget.Workspace);
  }
}

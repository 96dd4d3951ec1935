// "Always" answers to the sandbox's network questions, made in this window: the bridge writes
// each answer to the run log (a `network-question` line under the run, which names this
// window's bridge as its owner), and this adds the host to the user's
// codeExecutionMode.sandbox.network.allow (user settings, whatever the workspace), saying so in
// a notification with Undo. The run log is how the extension learns what its bridge did; a
// question of another window's bridge is that window's to add.
import * as vscode from 'vscode';
import type { StateFiles } from './state-files.ts';
import { SECTION } from './settings/trusted-settings.ts';
import { alwaysAnswers, withAllowed } from './views/network-text.ts';

const SETTING = 'sandbox.network.allow';

export function addAlwaysAllowedHosts(files: StateFiles, log: vscode.LogOutputChannel): vscode.Disposable {
  // Answers already in the log when the window starts were handled (or are another session's).
  const seen = new Set(alwaysAnswers(files.runs(), files.owner).map((a) => a.key));
  // One settings write at a time, so that two answers in a row both land.
  let writing: Promise<void> = Promise.resolve();
  return files.onDidChangeRuns(() => {
    for (const answer of alwaysAnswers(files.runs(), files.owner)) {
      if (seen.has(answer.key)) continue;
      seen.add(answer.key);
      writing = writing.then(() => add(answer.entry, log)).catch((error: Error) => log.error(`${SECTION}.${SETTING}: ${error.message}`));
    }
  });
}

function userList(): string[] {
  const value = vscode.workspace.getConfiguration(SECTION).inspect<unknown>(SETTING)?.globalValue;
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

async function add(entry: string, log: vscode.LogOutputChannel): Promise<void> {
  const current = userList();
  const next = withAllowed(current, entry);
  if (next.length === current.length) return;
  await vscode.workspace.getConfiguration(SECTION).update(SETTING, next, vscode.ConfigurationTarget.Global);
  log.info(`${entry} added to ${SECTION}.${SETTING} (user settings): answered "always" to a sandbox network question`);
  void vscode.window
    .showInformationMessage(
      `Code Execution Mode: the sandbox may now always reach ${entry}; it was added to ${SECTION}.${SETTING} in your user settings.`,
      'Undo',
      'Open Setting',
    )
    .then(async (choice) => {
      if (choice === 'Open Setting') await vscode.commands.executeCommand('workbench.action.openSettings', `${SECTION}.${SETTING}`);
      if (choice !== 'Undo') return;
      const now = userList();
      await vscode.workspace.getConfiguration(SECTION).update(
        SETTING,
        now.filter((item) => item.trim().toLowerCase() !== entry.toLowerCase()),
        vscode.ConfigurationTarget.Global,
      );
      log.info(`${entry} removed again from ${SECTION}.${SETTING} (Undo)`);
    });
}

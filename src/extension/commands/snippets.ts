// Snippets in the editor: "Save as Snippet…" on a run (the run panel's button, the Runs view's
// context menu) asks for a name, a description and main's parameters, writes the file (0600) into
// the user's snippets folder with a comment naming the run, logs a `snippet-saved` event for that
// run, and opens the file for review; the Tools view's "Snippets" section lists
// the user's snippets and, in a trusted workspace, the workspace's, kept fresh by a watcher.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { RunRecord } from '../../state/run-log/reader.ts';
import { RunLog } from '../../state/run-log/writer.ts';
import {
  SnippetStore,
  snippetDirs,
  snippetHash,
  snippetNameProblem,
  snippetSourceFromRun,
  writeSnippet,
  type Snippet,
} from '../../state/snippets.ts';
import type { ToolsView } from '../views/tools-view.ts';

export interface SnippetCommandsOptions {
  stateDir: string;
  /** The workspace's snippets folder when it is used (a trusted workspace), as the bridge is told. */
  workspaceSnippetsDir: () => string | undefined;
  findRun: (arg: unknown) => RunRecord | undefined;
  tools: ToolsView;
}

/** A name suggested from the run's code: its first comment, else empty. */
function suggestedSnippetName(code: string): string {
  const comment = /^\s*#\s*(.+)$/m.exec(code)?.[1] ?? '';
  const name = comment
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 40)
    .replace(/^(\d)/, '_$1');
  return name && !snippetNameProblem(name) ? name : '';
}

export function registerSnippetCommands(context: vscode.ExtensionContext, options: SnippetCommandsOptions): { refresh(): Promise<void> } {
  const userDir = join(options.stateDir, 'snippets');
  const store = () => new SnippetStore(snippetDirs(options.stateDir, options.workspaceSnippetsDir()));
  const refresh = async () => options.tools.setSnippets(await store().list());

  let watchers: vscode.Disposable[] = [];
  const watch = () => {
    for (const w of watchers) w.dispose();
    watchers = [userDir, options.workspaceSnippetsDir()].flatMap((dir) => {
      if (!dir) return [];
      const watcher = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(vscode.Uri.file(dir), '*.py'));
      const changed = () => void refresh();
      watcher.onDidCreate(changed);
      watcher.onDidChange(changed);
      watcher.onDidDelete(changed);
      return [watcher];
    });
    void refresh();
  };
  watch();
  context.subscriptions.push(
    {
      dispose: () => {
        for (const w of watchers) w.dispose();
      },
    },
    vscode.workspace.onDidGrantWorkspaceTrust(watch),
    vscode.workspace.onDidChangeWorkspaceFolders(watch),
  );

  context.subscriptions.push(
    // `preset` (for scripts and tests): answers that skip their question, checked the same way.
    vscode.commands.registerCommand('codeExecutionMode.saveRunAsSnippet', async (arg: unknown, preset: SnippetPreset = {}) => {
      const run = options.findRun(arg);
      if (!run)
        return void vscode.window.showWarningMessage('Code Execution Mode: pick a run in the Sandbox Runs view to save as a snippet.');
      const existing = new Set((await store().list()).filter((s) => s.origin === 'user').map((s) => s.name));
      const name =
        preset.name ??
        (await vscode.window.showInputBox({
          title: 'Save Run as Snippet (1/3): name',
          // Three steps: a view or panel that refreshes meanwhile must not throw away what was typed.
          ignoreFocusOut: true,
          prompt: 'The model runs it with await run_snippet("NAME", **kwargs)',
          value: suggestedSnippetName(run.code),
          validateInput: (value) =>
            snippetNameProblem(value) ??
            (existing.has(value)
              ? { message: `"${value}" exists: saving replaces it`, severity: vscode.InputBoxValidationSeverity.Warning }
              : undefined),
        }));
      if (name === undefined) return;
      const badName = snippetNameProblem(name);
      if (badName) return void vscode.window.showErrorMessage(badName);
      const description =
        preset.description ??
        (await vscode.window.showInputBox({
          title: 'Save Run as Snippet (2/3): description',
          ignoreFocusOut: true,
          prompt: 'What it does (its docstring; this is what search_tool_docs matches)',
          validateInput: (value) => (value.trim() ? undefined : 'Say what the snippet does: the model finds it by this text'),
        }));
      if (description === undefined) return;
      const paramsText =
        preset.params ??
        (await vscode.window.showInputBox({
          title: 'Save Run as Snippet (3/3): parameters of main (optional)',
          ignoreFocusOut: true,
          prompt:
            'Comma-separated, e.g. "query, limit=10". A name the code sets on one top-level line (query = "...") takes that value as its default',
          validateInput: (value) => {
            try {
              snippetSourceFromRun('x', '', parseParams(value));
              return undefined;
            } catch (error) {
              return (error as Error).message;
            }
          },
        }));
      if (paramsText === undefined) return;
      try {
        const source = snippetSourceFromRun(description, run.code, parseParams(paramsText), {
          run: run.id,
          session: run.session,
          started: run.started,
        });
        const path = await writeSnippet(userDir, name, source, { overwrite: existing.has(name) });
        // The audit record says which run the snippet came from (the file says so too, in a comment).
        const runLog = new RunLog(options.stateDir);
        runLog.snippetSaved({ run: run.id, name, sha256: snippetHash(source) });
        runLog.close();
        await refresh();
        await vscode.window.showTextDocument(vscode.Uri.file(path), { preview: false });
        void vscode.window.showInformationMessage(
          `Snippet "${name}" saved: review it, then the model can run it with await run_snippet("${name}", ...).`,
        );
        return path;
      } catch (error) {
        void vscode.window.showErrorMessage(`Could not save snippet "${name}": ${(error as Error).message}`);
      }
    }),
    vscode.commands.registerCommand('codeExecutionMode.openSnippet', async (arg: unknown) => {
      const snippet = snippetOf(arg);
      if (snippet) await vscode.window.showTextDocument(vscode.Uri.file(snippet.path));
    }),
    vscode.commands.registerCommand('codeExecutionMode.deleteSnippet', async (arg: unknown) => {
      const snippet = snippetOf(arg);
      if (!snippet || snippet.origin !== 'user') return;
      const answer = await vscode.window.showWarningMessage(
        `Delete snippet "${snippet.name}"?`,
        { modal: true, detail: snippet.path },
        'Delete',
      );
      if (answer !== 'Delete') return;
      await rm(snippet.path, { force: true });
      await refresh();
    }),
  );
  return { refresh };
}

export interface SnippetPreset {
  name?: string;
  description?: string;
  /** main's parameters, comma-separated ("query, limit=10"). */
  params?: string;
}

/** "query, limit=10" -> ["query", "limit=10"]; names are checked by snippetSourceFromRun. */
function parseParams(text: string): string[] {
  return text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
}

function snippetOf(arg: unknown): Snippet | undefined {
  return arg && typeof arg === 'object' && 'snippet' in arg ? (arg as { snippet: Snippet }).snippet : undefined;
}

// Activation: registers the bridge with VS Code's MCP support, the runtime status, the Runs
// and Tools views, the run panel and the commands. Heavy work (runtime probing, starting
// servers) happens after activation, never in it.
import { join } from 'node:path';
import * as vscode from 'vscode';
import { createBridge, pullHintFor, type Bridge } from '../bridge/server.ts';
import type { Config } from '../config/schema.ts';
import { applySecrets } from '../config/secrets.ts';
import { ImageMissingError } from '../sandbox/errors.ts';
import { logBridgeEvents } from './bridge-events.ts';
import { DiagnosePanel } from './diagnose-panel.ts';
import { BridgeProvider, PROVIDER_ID } from './provider.ts';
import { RunPanel } from './run-panel.ts';
import { RunsView } from './runs-view.ts';
import { RuntimeStatusBar } from './runtime-status.ts';
import { ServerSecrets } from './secrets.ts';
import { registerServerCommands } from './server-commands.ts';
import { readSettings, SECTION } from './settings.ts';
import { StateFiles } from './state-files.ts';
import { ToolsView } from './tools-view.ts';

/** What activate() returns: used by the host tests, and by nothing that ships. */
export interface ExtensionApi {
  stateDir: string;
  /** This extension's log folder; the output channel's file is written nearby. */
  logDir: string;
  provider: BridgeProvider;
  runs: RunsView;
  tools: ToolsView;
  runtime: RuntimeStatusBar;
  secrets: ServerSecrets;
  activationMs: number;
  panel(): RunPanel | undefined;
  diagnosePanel(): DiagnosePanel | undefined;
  config(): Config;
}

export async function activate(context: vscode.ExtensionContext): Promise<ExtensionApi> {
  const started = performance.now();
  const log = vscode.window.createOutputChannel('Code Execution Mode', { log: true });
  context.subscriptions.push(log);
  const stateDir = join(context.globalStorageUri.fsPath, 'state');
  const configFile = join((context.storageUri ?? context.globalStorageUri).fsPath, 'bridge-config.json');
  const secrets = new ServerSecrets(context);
  const files = new StateFiles(stateDir);
  const provider = new BridgeProvider(vscode.Uri.joinPath(context.extensionUri, 'dist', 'cli.js').fsPath, configFile, secrets, log);
  const runs = new RunsView(files, context.globalState);
  const tools = new ToolsView(files);
  let settings = readSettings(stateDir);
  const runtime = new RuntimeStatusBar(settings.config.sandbox, log, context.extensionUri);
  context.subscriptions.push(files, provider, runs, tools, runtime);

  // In-process bridge for "Run Selection" and "Refresh Tools"; rebuilt when settings change.
  // It gives the same fixes as the bridge VS Code starts (the VS Code command to pull).
  let local: Promise<Bridge> | undefined;
  const localBridge = async () => {
    local ??= (async () =>
      createBridge(applySecrets(settings.config, await secrets.all()), (line) => log.info(`[local] ${line}`), { pullHint: pullHintFor('vscode') }))();
    return local;
  };
  const dropLocal = async () => {
    const old = local;
    local = undefined;
    await (await old?.catch(() => undefined))?.close();
  };
  context.subscriptions.push({ dispose: () => void dropLocal() }, { dispose: () => DiagnosePanel.current?.dispose() });

  const applySettings = async () => {
    settings = readSettings(stateDir);
    for (const problem of settings.problems) log.warn(problem);
    tools.setSettings(settings.entries, settings.problems);
    await provider.update(settings.config);
    await dropLocal();
  };
  await applySettings();

  context.subscriptions.push(
    vscode.lm.registerMcpServerDefinitionProvider(PROVIDER_ID, provider),
    vscode.window.registerTreeDataProvider('codeExecutionMode.runs', runs),
    vscode.window.registerTreeDataProvider('codeExecutionMode.tools', tools),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration(SECTION)) return;
      void applySettings().then(() => {
        if (e.affectsConfiguration(`${SECTION}.sandbox`)) runtime.setSandbox(settings.config.sandbox);
      });
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => void applySettings()),
    vscode.workspace.onDidChangeWorkspaceFolders(() => void applySettings()),
    secrets.onDidChange(() => void applySettings()),
    files.onDidChangeRuns(() => {
      const open = RunPanel.current;
      const fresh = open && runs.find(open.run.id);
      if (open && fresh) open.update(fresh);
    }),
  );
  context.subscriptions.push(...logBridgeEvents(files, log));
  registerServerCommands(context, secrets);

  const command = (id: string, fn: (...args: unknown[]) => unknown) => context.subscriptions.push(vscode.commands.registerCommand(`codeExecutionMode.${id}`, fn));
  const runOf = (arg: unknown) => {
    const id = typeof arg === 'string' ? arg : (arg as { run?: { id?: string } } | undefined)?.run?.id;
    return id ? runs.find(id) : undefined;
  };
  command('openRun', (arg) => {
    const run = runOf(arg);
    if (run) RunPanel.show(run, context.extensionUri, stateDir);
  });
  command('copyRunCode', async (arg) => {
    const run = runOf(arg);
    if (run) await vscode.env.clipboard.writeText(run.code);
  });
  command('rerun', async (arg) => {
    const run = runOf(arg);
    if (run) await runInSandbox(run.code, run.session);
  });
  command('clearRuns', () => runs.clear());
  command('openRunLog', async () => vscode.window.showTextDocument(vscode.Uri.file(files.runLogPath)));
  command('diagnoseRuntime', () => runtime.diagnose());
  command('pullImage', () => runtime.pull());
  command('showOutput', () => log.show());
  command('refreshTools', async () => {
    await vscode.window.withProgress({ location: { viewId: 'codeExecutionMode.tools' }, title: 'Listing tools' }, async () => {
      const bridge = await localBridge();
      await bridge.hub.ensureCatalog();
      await bridge.hub.catalog.flush();
    });
    tools.refresh();
  });
  command('searchTools', async () => {
    const bridge = await localBridge();
    const pick = vscode.window.createQuickPick<vscode.QuickPickItem>();
    pick.placeholder = 'Search the tools of every proxied server (as search_tool_docs does)';
    pick.matchOnDescription = true;
    pick.matchOnDetail = true;
    const update = () => {
      const hits = pick.value.trim() ? bridge.hub.catalog.search(pick.value, 20) : bridge.hub.catalog.allTools().slice(0, 200);
      pick.items = hits.map((t) => ({ label: `mcp_${t.serverAlias}.${t.alias}`, description: t.server, detail: t.description.split('\n')[0], alwaysShow: true }));
    };
    pick.onDidChangeValue(update);
    pick.onDidAccept(async () => {
      const chosen = pick.selectedItems[0];
      if (chosen) await vscode.env.clipboard.writeText(`await ${chosen.label}()`);
      pick.hide();
    });
    pick.onDidHide(() => pick.dispose());
    pick.busy = true;
    pick.show();
    await bridge.hub.ensureCatalog();
    pick.busy = false;
    update();
  });

  const runInSandbox = async (code: string, session = 'editor') => {
    const bridge = await localBridge();
    const runId = crypto.randomUUID();
    bridge.runLog.runStarted({ run: runId, session, code, timeoutMs: settings.config.sandbox.timeoutSeconds * 1000 });
    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'Running in the sandbox', cancellable: true },
      async (_progress, token) => {
        const abort = new AbortController();
        token.onCancellationRequested(() => abort.abort());
        try {
          const result = await bridge.sandbox.execute(code, { runId, session, signal: abort.signal });
          bridge.runLog.runEnded(result, { toolCalls: bridge.toolCalls.toolCallsOf(runId) });
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          bridge.runLog.runFailed({ run: runId, session, message });
          // The bridge's message for a missing image speaks to the model; a person gets a button.
          const missingImage = error instanceof ImageMissingError;
          const shown = missingImage ? `The sandbox image ${error.image} is not present in ${error.runtime}: pull it once to run code.` : message;
          void vscode.window.showErrorMessage(shown, ...(missingImage ? ['Pull'] : []), 'Diagnose').then((choice) => {
            if (choice === 'Pull') void runtime.pull();
            else if (choice === 'Diagnose') void runtime.diagnose();
          });
        } finally {
          bridge.toolCalls.forget(runId);
        }
      },
    );
    const run = runs.find(runId);
    if (run) RunPanel.show(run, context.extensionUri, stateDir);
    runs.refresh();
  };
  command('runSelection', async () => {
    const editor = vscode.window.activeTextEditor;
    const code = editor ? (editor.selection.isEmpty ? editor.document.getText() : editor.document.getText(editor.selection)) : '';
    if (!code.trim()) {
      void vscode.window.showInformationMessage('Select some Python to run in the sandbox.');
      return;
    }
    await runInSandbox(code);
  });

  // After activation: check the sandbox for the status bar (it starts a container).
  setTimeout(() => void runtime.refresh(), 0);
  const activationMs = performance.now() - started;
  log.info(`activated in ${activationMs.toFixed(1)} ms; state in ${stateDir}`);
  return {
    stateDir,
    logDir: context.logUri.fsPath,
    provider,
    runs,
    tools,
    runtime,
    secrets,
    activationMs,
    panel: () => RunPanel.current,
    diagnosePanel: () => DiagnosePanel.current,
    config: () => settings.config,
  };
}

export function deactivate(): void {}

// Activation: registers the bridge with VS Code's MCP support, the runtime status, the Runs
// and Tools views, the run panel and the commands. Heavy work (runtime probing, starting
// servers) happens after activation, never in it.
import { randomUUID } from 'node:crypto';
import { dirname, join } from 'node:path';
import * as vscode from 'vscode';
import { setCatalogWriter } from '../state/catalog-file.ts';
import { ProxyHub } from '../bridge/proxy/hub.ts';
import type { Config } from '../config/schema.ts';
import { applySecrets } from '../config/secrets.ts';
import { logBridgeEvents } from './bridge-events.ts';
import { addAlwaysAllowedHosts } from './network-always.ts';
import { BridgeRunner } from './bridge-runner.ts';
import { WorkspaceConsent } from './settings/consent.ts';
import { DiagnosePanel } from './panels/diagnose-panel.ts';
import { BridgeProvider, PROVIDER_ID, SERVER_LABEL } from './provider.ts';
import { settingsSnapshot, showRestartNotice } from './settings/restart-notice.ts';
import { RunPanel } from './panels/run-panel.ts';
import { RunsView } from './views/runs-view.ts';
import { PendingConfirmationsStatus } from './views/pending-confirmations.ts';
import { RuntimeStatusBar } from './views/runtime-status.ts';
import { ServerSecrets } from './settings/secrets.ts';
import { registerServerCommands } from './commands/servers.ts';
import { registerSnippetCommands } from './commands/snippets.ts';
import { readSettings, SECTION, type SettingsResult } from './settings/settings.ts';
import { StateFiles } from './state-files.ts';
import { SignInPrompts, signOutCommand } from './commands/sign-in.ts';
import { tokenKey } from './settings/token-key.ts';
import { ToolsView, type ToolNode } from './views/tools-view.ts';
import { sandboxSteps, WALKTHROUGH_KEYS, WALKTHROUGH_STEP_IDS } from './walkthrough-steps.ts';

/** What activate() returns: used by the host tests, and by nothing that ships. */
export interface ExtensionApi {
  stateDir: string;
  /** This extension's log folder; the output channel's file is written nearby. */
  logDir: string;
  provider: BridgeProvider;
  runs: RunsView;
  tools: ToolsView;
  runtime: RuntimeStatusBar;
  /** Confirmations waiting for the user: the status bar item and its notification. */
  confirmations: PendingConfirmationsStatus;
  secrets: ServerSecrets;
  /** Consent to what the workspace defines: decisions, the question, and a responder for tests. */
  consent: WorkspaceConsent;
  activationMs: number;
  /** The bridge configuration file this window's bridge reads. */
  configFile: string;
  /** Why the state dir cannot be used now (undefined: it can), and the warnings shown so far. */
  stateProblem(): string | undefined;
  stateWarnings: string[];
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
  // This window's id: its bridge writes its own section of catalog.json under it, and so does
  // the in-process hub of Refresh Tools (as "refresh"), so windows never erase each other's.
  const owner = randomUUID();
  setCatalogWriter({ role: 'refresh', owner });
  const files = new StateFiles(stateDir, owner);
  const provider = new BridgeProvider(vscode.Uri.joinPath(context.extensionUri, 'dist', 'cli.js').fsPath, configFile, secrets, log, owner);
  // OAuth: token files sealed with a key from SecretStorage; sign-ins asked for in a notification.
  provider.tokenKey = () => tokenKey(context.secrets, (message) => log.warn(message));
  context.subscriptions.push(new SignInPrompts(stateDir, owner, log));
  const runs = new RunsView(files, context.globalState);
  const tools = new ToolsView(files);
  // Beside the bridge's config: the decisions it reads live, and its requests for them.
  const consent = new WorkspaceConsent(context.globalState, dirname(configFile), log);
  context.subscriptions.push(consent);
  const read = () =>
    readSettings(stateDir, {
      decision: (hash) => consent.decision(hash),
      decisionsFile: consent.decisionsFile,
      requestsFile: consent.requestsFile,
    });
  let settings: SettingsResult = read();
  const runtime = new RuntimeStatusBar(settings.config.sandbox, log, context.extensionUri);
  context.subscriptions.push(files, provider, runs, tools, runtime);
  const confirmations = new PendingConfirmationsStatus(files);
  context.subscriptions.push(confirmations);

  // A state dir that cannot be written loses the audit record: say so, with the path.
  const stateWarnings: string[] = [];
  const onStateProblem = (problem: string | undefined) => {
    if (!problem) return log.info(`the state folder ${stateDir} is usable again`);
    log.error(problem);
    const message = `Code Execution Mode cannot use its state folder ${stateDir}: sandbox runs are not recorded in the run log. ${problem}`;
    stateWarnings.push(message);
    void vscode.window.showWarningMessage(message, 'Show Output').then((choice) => choice && log.show());
  };
  context.subscriptions.push(files.onDidChangeProblem(onStateProblem));
  if (files.problem) onStateProblem(files.problem);

  // An in-process hub (no sandbox, no run log) for Refresh Tools and Search Tools; runs go to
  // the bridge VS Code started. Rebuilt when settings change.
  let local: Promise<ProxyHub> | undefined;
  const localHub = async () => {
    local ??= (async () => {
      const key = await tokenKey(context.secrets, (message) => log.warn(message));
      const withKey = { ...applySecrets(settings.config, await secrets.all()), tokenKey: key ? Buffer.from(key, 'base64') : undefined };
      // Stored tokens only: a sign-in is the bridge's (its callback port, its notification).
      const hub = new ProxyHub(withKey, { stateDir, log: (line) => log.info(`[tools] ${line}`), interactiveSignIn: false });
      await hub.start();
      return hub;
    })();
    return local;
  };
  const dropLocal = async () => {
    const old = local;
    local = undefined;
    await (await old?.catch(() => undefined))?.close();
  };
  context.subscriptions.push({ dispose: () => void dropLocal() }, { dispose: () => DiagnosePanel.current?.dispose() });
  const runner = new BridgeRunner({
    definitionId: `${context.extension.id.toLowerCase()}/${SERVER_LABEL}`,
    runs,
    runtime,
    log,
    showRun: (run) => RunPanel.show(run, context.extensionUri, stateDir),
  });

  // The settings as the running bridge got them: what Undo puts back after a restart.
  let applied = settingsSnapshot();
  const applySettings = async () => {
    settings = read();
    for (const problem of settings.problems) log.warn(problem);
    consent.setItems(settings.consent);
    tools.setSettings(settings.entries, settings.problems, consent.view());
    const before = applied;
    applied = settingsSnapshot();
    const restartedFor = await provider.update(settings.config);
    if (restartedFor) void showRestartNotice(restartedFor, before);
    await dropLocal();
  };
  // The bridge reads decisions from the start: write them before it can be started.
  await consent.writeDecisions().catch((error: Error) => log.error(`could not write ${consent.decisionsFile}: ${error.message}`));
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
    // Servers are gated live by the bridge; a sandbox value allowed changes the config (a restart).
    consent.onDidChange(() => {
      const sandbox = JSON.stringify(settings.config.sandbox);
      void applySettings().then(() => {
        if (JSON.stringify(settings.config.sandbox) !== sandbox) runtime.setSandbox(settings.config.sandbox);
      });
    }),
    files.onDidChangeRuns(() => {
      const open = RunPanel.current;
      const fresh = open && runs.find(open.run.id);
      if (open && fresh) open.update(fresh);
    }),
  );
  context.subscriptions.push(...logBridgeEvents(files, log));
  // "Always" answers to the sandbox's network questions go to the user's sandbox.network.allow.
  context.subscriptions.push(addAlwaysAllowedHosts(files, log));
  // The walkthrough marks its steps done from these (completionEvents onContext:...).
  const walkthrough = new Map<string, boolean>();
  const setStep = (step: keyof typeof WALKTHROUGH_KEYS, done: boolean) => {
    const key = WALKTHROUGH_KEYS[step];
    if (walkthrough.get(key) === done) return;
    walkthrough.set(key, done);
    void vscode.commands.executeCommand('setContext', key, done);
    // See WALKTHROUGH_STEP_IDS; a VS Code without the command still has the key.
    if (done)
      void Promise.resolve(vscode.commands.executeCommand('welcome.markStepComplete', WALKTHROUGH_STEP_IDS[step])).catch(() => undefined);
  };
  const stepsFromState = () => {
    setStep('hasServers', Object.keys(settings.entries).length > 0);
    setStep('hasRuns', files.runs().length > 0);
  };
  stepsFromState();
  context.subscriptions.push(
    runtime.onDidReport((report) => {
      const steps = sandboxSteps(report);
      setStep('runtimeReady', steps.runtimeReady);
      setStep('imagePresent', steps.imagePresent);
    }),
    files.onDidChangeRuns(stepsFromState),
    vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration(SECTION) && setTimeout(stepsFromState, 0)),
  );
  registerServerCommands(context, secrets);

  const command = (id: string, fn: (...args: unknown[]) => unknown) =>
    context.subscriptions.push(vscode.commands.registerCommand(`codeExecutionMode.${id}`, fn));
  const runOf = (arg: unknown) => {
    const id = typeof arg === 'string' ? arg : (arg as { run?: { id?: string } } | undefined)?.run?.id;
    return id ? runs.find(id) : undefined;
  };
  const snippets = registerSnippetCommands(context, {
    stateDir,
    workspaceSnippetsDir: () => settings.config.workspaceSnippetsDir,
    findRun: runOf,
    tools,
  });
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
    if (run) await runner.run(run.code, run.session);
  });
  command('clearRuns', () => runs.clear());
  // The Tools view's inline action: the Python call of a tool, with the sandbox's aliases.
  command('copyToolCall', async (arg) => {
    const call = arg && typeof arg === 'object' && (arg as ToolNode).kind === 'tool' ? (arg as ToolNode).call : undefined;
    if (call) await vscode.env.clipboard.writeText(call);
  });
  command('openRunLog', async () => vscode.window.showTextDocument(vscode.Uri.file(files.runLogPath)));
  command('diagnoseRuntime', () => runtime.diagnose());
  command('pullImage', () => runtime.pull());
  command('buildImage', () => runtime.build());
  command('showOutput', () => log.show());
  // From a server's item (its node, or its name) or from anywhere (everything pending).
  command('reviewConsent', (arg) =>
    consent.review(
      typeof arg === 'string'
        ? arg
        : arg && typeof arg === 'object' && 'name' in arg && typeof arg.name === 'string'
          ? arg.name
          : undefined,
    ),
  );
  command('manageConsent', () => consent.manage());
  command('signOut', (arg) =>
    signOutCommand(stateDir, Object.keys(settings.entries), arg, async () => {
      provider.restart();
      await dropLocal();
    }),
  );
  command('refreshTools', async () => {
    await vscode.window.withProgress({ location: { viewId: 'codeExecutionMode.tools' }, title: 'Listing tools' }, async () => {
      const hub = await localHub();
      await hub.refresh();
      await hub.catalog.flush();
    });
    await snippets.refresh();
    tools.refresh();
  });
  command('searchTools', async () => {
    const hub = await localHub();
    const pick = vscode.window.createQuickPick<vscode.QuickPickItem>();
    pick.placeholder = 'Search the tools of every proxied server (as search_tool_docs does)';
    pick.matchOnDescription = true;
    pick.matchOnDetail = true;
    const update = () => {
      const hits = pick.value.trim()
        ? hub.search(pick.value, 20)
        : hub.catalog
            .allTools()
            .filter((t) => hub.consentState(t.server) === 'allowed')
            .slice(0, 200);
      pick.items = hits.map((t) => ({
        label: `mcp_${t.serverAlias}.${t.alias}`,
        description: t.server,
        detail: t.description.split('\n')[0],
        alwaysShow: true,
      }));
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
    await hub.discover(Infinity);
    pick.busy = false;
    update();
  });
  command('runSelection', async () => {
    const editor = vscode.window.activeTextEditor;
    const code = editor ? (editor.selection.isEmpty ? editor.document.getText() : editor.document.getText(editor.selection)) : '';
    if (!code.trim()) {
      void vscode.window.showInformationMessage('Select some Python to run in the sandbox.');
      return;
    }
    await runner.run(code);
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
    confirmations,
    secrets,
    consent,
    activationMs,
    configFile,
    stateProblem: () => files.problem,
    stateWarnings,
    panel: () => RunPanel.current,
    diagnosePanel: () => DiagnosePanel.current,
    config: () => settings.config,
  };
}

export function deactivate(): void {}

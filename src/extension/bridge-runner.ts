// Run Selection and Re-run: the code goes to run_python of the bridge VS Code started, through
// VS Code's own MCP client (vscode.lm.invokeTool), so it runs in the same bridge, session and
// run log as the agent's, and no second bridge competes for the state dir. When that bridge
// is not running (not started yet, or not trusted), the person is told and offered to start it.
import * as vscode from 'vscode';
import type { RunRecord } from '../state/run-log/reader.ts';
import { bridgeToolName, findCallRun, outcomeOfRun, REFUSED_TYPES, runOutcome, type RunOutcome } from './bridge-tool.ts';
import { SERVER_LABEL } from './provider.ts';
import type { RunsView } from './views/runs-view.ts';
import type { RuntimeStatusBar } from './views/runtime-status.ts';

const START = 'Start Bridge';

export interface BridgeRunnerDeps {
  /** The id VS Code gives this extension's MCP server definition. */
  definitionId: string;
  runs: RunsView;
  runtime: RuntimeStatusBar;
  log: vscode.LogOutputChannel;
  showRun(run: RunRecord): void;
}

export class BridgeRunner {
  private readonly deps: BridgeRunnerDeps;

  constructor(deps: BridgeRunnerDeps) {
    this.deps = deps;
  }

  /** The language-model tool name of our run_python, when VS Code has it. */
  toolName(): string | undefined {
    return bridgeToolName(vscode.lm.tools, SERVER_LABEL);
  }

  /** Runs code in the bridge's session (the agent's "default" unless told) and opens the run. */
  async run(code: string, session = 'default'): Promise<RunOutcome | undefined> {
    const name = this.toolName() ?? (await this.offerStart());
    if (!name) return undefined;
    let outcome: RunOutcome;
    const since = Date.now();
    try {
      outcome = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'Running in the sandbox', cancellable: true },
        async (_progress, token) => {
          const result = await vscode.lm.invokeTool(name, { input: { code, session }, toolInvocationToken: undefined }, token);
          return runOutcome(result.content.map((part) => (part instanceof vscode.LanguageModelTextPart ? part.value : '')).join(''));
        },
      );
    } catch (error) {
      if (error instanceof vscode.CancellationError) return undefined;
      const message = error instanceof Error ? error.message : String(error);
      this.deps.log.error(`run_python through VS Code's MCP client failed: ${message}`);
      void vscode.window.showErrorMessage(`The sandbox bridge could not run the code: ${message}`, 'Show Bridge Output').then((choice) => {
        if (choice) void vscode.commands.executeCommand('workbench.mcp.showOutput', this.deps.definitionId);
      });
      return undefined;
    }
    // A text-only result (this extension's bridge sends no structuredContent): the run log says how it went.
    const run = await this.waitForRun(code, session, since);
    if (outcome.status === undefined && run?.status) outcome = outcomeOfRun(run, outcome.text);
    if (outcome.auditLog) void vscode.window.showWarningMessage(`Code Execution Mode: ${outcome.auditLog}.`);
    if (outcome.status === undefined || (outcome.error && REFUSED_TYPES.includes(outcome.error.type))) {
      // Refused before it ran (an argument the bridge does not take): the text says why.
      void vscode.window.showErrorMessage(outcome.error?.message ?? (outcome.text || 'The sandbox bridge gave no result.'));
      return outcome;
    }
    if (outcome.status === 'error' && outcome.error && (outcome.durationMs === undefined || outcome.notRun))
      this.sandboxFailed(outcome.error);
    if (run) this.deps.showRun(run);
    this.deps.runs.refresh();
    return outcome;
  }

  /** No sandbox could start: say so in a person's words, with the fix at hand. */
  private sandboxFailed(error: { type: string; message: string }): void {
    // The bridge's message for a missing image speaks to the model; a person gets a button.
    const missing = /The sandbox image "([^"]+)" is not present in (\w+)/.exec(error.message);
    const shown = missing ? `The sandbox image ${missing[1]} is not present in ${missing[2]}: pull it once to run code.` : error.message;
    void vscode.window.showErrorMessage(shown, ...(missing ? ['Pull'] : []), 'Diagnose').then((choice) => {
      if (choice === 'Pull') void this.deps.runtime.pull();
      else if (choice === 'Diagnose') void this.deps.runtime.diagnose();
    });
  }

  /** The bridge is not running: VS Code starts it on request (and asks to trust it first). */
  private async offerStart(): Promise<string | undefined> {
    const choice = await vscode.window.showInformationMessage(
      'The sandbox bridge is not running in this window yet. VS Code starts it when you allow it (the first time, it asks you to trust the Code Execution Mode MCP server).',
      START,
    );
    if (choice !== START) return undefined;
    await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: 'Starting the sandbox bridge' }, async () => {
      await vscode.commands.executeCommand('workbench.mcp.startServer', this.deps.definitionId, { waitForLiveTools: true });
      for (let i = 0; i < 40 && !this.toolName(); i++) await new Promise((resolve) => setTimeout(resolve, 250));
    });
    const name = this.toolName();
    if (!name) {
      void vscode.window
        .showErrorMessage('The sandbox bridge did not start (or was not trusted). Its output says why.', 'Show Bridge Output')
        .then((picked) => {
          if (picked) void vscode.commands.executeCommand('workbench.mcp.showOutput', this.deps.definitionId);
        });
    }
    return name;
  }

  /** The run as the log has it, once its end is there (the views follow the file). */
  private async waitForRun(code: string, session: string, since: number): Promise<RunRecord | undefined> {
    const find = () => findCallRun(this.deps.runs.runs(), code, session, since);
    for (let i = 0; i < 40; i++) {
      const run = find();
      if (run?.status) return run;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return find();
  }
}

// The Sandbox Runs view: newest first, each row led by the code's first meaningful line; its
// state, duration and session follow in the description ("ok · 1.2 s · default": what the
// inline actions cover on hover, not the code) and the tooltip, and the icon shows the state
// too. Each run's tool calls as children. Live: refreshed when the run log changes, and every
// second while a run is going (its elapsed time, "waiting for confirmation" while a question
// is open). The tooltip has the run's token meter.
import * as vscode from 'vscode';
import { displayStatus, type RunRecord, type ToolCallRecord } from '../../state/run-log/reader.ts';
import { plural } from '../../shared/plural.ts';
import { formatDuration } from '../../shared/durations.ts';
import { runElapsed, runFacts, runLabel, runState, waitsForUser } from './run-text.ts';
import { relaySummary } from './relay-text.ts';
import { METER_METHOD, meterLine } from './meter-text.ts';
import type { StateFiles } from '../state-files.ts';

const CLEARED_KEY = 'codeExecutionMode.runsClearedAt';
const MAX_RUNS = 200;

type Node = { kind: 'run'; run: RunRecord } | { kind: 'call'; run: RunRecord; call: ToolCallRecord };

const STATUS_ICONS: Record<string, [string, string]> = {
  ok: ['pass', 'testing.iconPassed'],
  error: ['error', 'testing.iconFailed'],
  timeout: ['watch', 'testing.iconFailed'],
  cancelled: ['circle-slash', 'disabledForeground'],
  lost: ['question', 'disabledForeground'],
};

export class RunsView implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly files: StateFiles;
  private readonly memento: vscode.Memento;
  private readonly subscription: vscode.Disposable;
  /** Ticks while a shown run is going, so its elapsed time moves. */
  private ticker: ReturnType<typeof setInterval> | undefined;

  constructor(files: StateFiles, memento: vscode.Memento) {
    this.files = files;
    this.memento = memento;
    this.subscription = files.onDidChangeRuns(() => this.changed.fire());
  }

  /** Runs shown: after the last "clear", newest first. */
  runs(): RunRecord[] {
    const cleared = this.memento.get<string>(CLEARED_KEY) ?? '';
    return this.files
      .runs()
      .filter((r) => r.started > cleared)
      .reverse()
      .slice(0, MAX_RUNS);
  }

  find(id: string): RunRecord | undefined {
    return this.files.runs().find((r) => r.id === id);
  }

  async clear(): Promise<void> {
    // The run log is the audit record and stays whole; only the view forgets.
    await this.memento.update(CLEARED_KEY, new Date().toISOString());
    this.changed.fire();
  }

  refresh(): void {
    this.changed.fire();
  }

  getChildren(node?: Node): Node[] {
    if (!node) {
      const runs = this.runs();
      this.tick(runs.some((r) => displayStatus(r) === 'running'));
      return runs.map((run) => ({ kind: 'run', run }));
    }
    if (node.kind === 'run') return node.run.toolCalls.map((call) => ({ kind: 'call', run: node.run, call }));
    return [];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === 'call') {
      const { call } = node;
      const item = new vscode.TreeItem(`${call.server}.${call.tool}`);
      item.description = `${call.outcome} · ${formatDuration(call.durationMs)}`;
      item.iconPath = new vscode.ThemeIcon(call.outcome === 'ok' ? 'tools' : 'warning');
      item.tooltip = new vscode.MarkdownString().appendCodeblock(JSON.stringify(call.arguments, null, 2).slice(0, 2000), 'json');
      if (call.error) item.tooltip.appendText(`\n${call.error}`);
      item.contextValue = 'toolCall';
      return item;
    }
    const { run } = node;
    const item = new vscode.TreeItem(
      runLabel(run),
      run.toolCalls.length > 0 ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None,
    );
    const status = displayStatus(run);
    const state = runState(run);
    // A run whose tool call or network request waits for the user's answer says so (live: the question is in the log).
    const waiting = waitsForUser(state);
    item.description = runFacts(run);
    const [icon, color] = waiting ? ['bell-dot', 'notificationsWarningIcon.foreground'] : (STATUS_ICONS[status] ?? ['loading~spin', '']);
    item.iconPath = new vscode.ThemeIcon(icon, color ? new vscode.ThemeColor(color) : undefined);
    const snippets = run.snippets.length > 0 ? ` · ran ${run.snippets.map((s) => `\`${s.name}\``).join(', ')}` : '';
    const elapsed = runElapsed(run);
    item.tooltip = new vscode.MarkdownString(
      `**${state}**${elapsed ? ` · ${elapsed}` : ''} · ${new Date(run.started).toLocaleString()} · session \`${run.session}\` · ${plural(run.toolCallCount, 'tool call')}${snippets}${relaySummary(run.relays)}\n`,
    );
    // The session's earlier state was gone when this run started (a restart, an idle close...).
    if (run.sessionChange) item.tooltip.appendText(`Started fresh: session ${run.sessionChange.kind}, ${run.sessionChange.reason}.\n`);
    // The token meter: what the model got, what stayed in the sandbox, what a direct listing would
    // cost. Only the bridge's numbers and our words, as Markdown so that the lines wrap.
    if (run.meter) item.tooltip.appendMarkdown(`\n\n**Token meter**: ${meterLine(run.meter)}.\n\n*${METER_METHOD}*\n\n`);
    item.tooltip.appendCodeblock(run.code.slice(0, 3000), 'python');
    item.contextValue = `run.${status}`;
    item.id = run.id;
    item.command = { command: 'codeExecutionMode.openRun', title: 'Open Run', arguments: [run.id] };
    return item;
  }

  private tick(running: boolean): void {
    if (running && !this.ticker) this.ticker = setInterval(() => this.changed.fire(), 1000);
    if (!running && this.ticker) {
      clearInterval(this.ticker);
      this.ticker = undefined;
    }
  }

  dispose(): void {
    this.tick(false);
    this.subscription.dispose();
    this.changed.dispose();
  }
}

// The Sandbox Runs view: newest first, with status, duration, session and tool calls; each
// run's tool calls as children. Live: refreshed when the run log changes.
import * as vscode from 'vscode';
import { displayStatus, waitingForConfirmation, type RunRecord, type ToolCallRecord } from '../bridge/run-log-reader.ts';
import type { StateFiles } from './state-files.ts';

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

export function formatDuration(ms: number | undefined): string {
  if (ms === undefined) return '';
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}

export function runLabel(run: RunRecord): string {
  const line = run.code.split('\n').find((l) => l.trim() && !l.trim().startsWith('#')) ?? run.code;
  const trimmed = line.trim();
  return trimmed.length > 60 ? `${trimmed.slice(0, 57)}...` : trimmed || '(empty)';
}

export class RunsView implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly files: StateFiles;
  private readonly memento: vscode.Memento;
  private readonly subscription: vscode.Disposable;

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
    if (!node) return this.runs().map((run) => ({ kind: 'run', run }));
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
    const item = new vscode.TreeItem(runLabel(run), run.toolCalls.length > 0 ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
    const status = displayStatus(run);
    const calls = run.toolCallCount;
    // A run whose tool call waits for the user's answer says so (live: the question is in the log).
    const waiting = status === 'running' && waitingForConfirmation(run);
    item.description = [waiting ? 'waiting for confirmation' : status, formatDuration(run.durationMs), run.session, calls ? `${calls} tool call${calls === 1 ? '' : 's'}` : ''].filter(Boolean).join(' · ');
    const [icon, color] = waiting ? ['bell-dot', 'notificationsWarningIcon.foreground'] : (STATUS_ICONS[status] ?? ['loading~spin', '']);
    item.iconPath = new vscode.ThemeIcon(icon, color ? new vscode.ThemeColor(color) : undefined);
    item.tooltip = new vscode.MarkdownString(`**${status}** · ${new Date(run.started).toLocaleString()} · session \`${run.session}\`\n`).appendCodeblock(run.code.slice(0, 3000), 'python');
    item.contextValue = `run.${status}`;
    item.id = run.id;
    item.command = { command: 'codeExecutionMode.openRun', title: 'Open Run', arguments: [run.id] };
    return item;
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}

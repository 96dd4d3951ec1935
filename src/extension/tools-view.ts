// The Tools view: every configured server with its state (not started, running, error with
// the message, disabled), its tools beneath with descriptions as tooltips.
import * as vscode from 'vscode';
import type { CatalogFile } from '../bridge/catalog/catalog.ts';
import type { StateFiles } from './state-files.ts';

export interface ServerNode {
  kind: 'server';
  name: string;
  enabled: boolean;
  state: string;
  error?: string;
  description?: string;
  tools?: Array<{ name: string; description?: string }>;
}
export interface ToolNode {
  kind: 'tool';
  server: string;
  name: string;
  description?: string;
}
export interface NoteNode {
  kind: 'note';
  text: string;
}
type Node = ServerNode | ToolNode | NoteNode;

export class ToolsView implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly files: StateFiles;
  private entries: Record<string, unknown> = {};
  private problems: string[] = [];
  private readonly subscription: vscode.Disposable;

  constructor(files: StateFiles) {
    this.files = files;
    this.subscription = files.onDidChangeCatalog(() => this.changed.fire());
  }

  setSettings(entries: Record<string, unknown>, problems: string[]): void {
    this.entries = entries;
    this.problems = problems;
    this.changed.fire();
  }

  refresh(): void {
    this.changed.fire();
  }

  servers(): ServerNode[] {
    const catalog: CatalogFile['servers'] = this.files.catalog();
    return Object.entries(this.entries).map(([name, raw]) => {
      const entry = (raw ?? {}) as { enabled?: boolean; description?: string };
      const cached = catalog[name];
      const enabled = entry.enabled !== false;
      return {
        kind: 'server' as const,
        name,
        enabled,
        state: enabled ? (cached?.state ?? 'not-started') : 'disabled',
        ...(cached?.error && enabled ? { error: cached.error } : {}),
        ...(entry.description ? { description: entry.description } : {}),
        ...(cached?.tools ? { tools: cached.tools.map((t) => ({ name: t.name, ...(t.description ? { description: t.description } : {}) })) } : {}),
      };
    });
  }

  getChildren(node?: Node): Node[] {
    if (!node) return [...this.problems.map((text) => ({ kind: 'note' as const, text })), ...this.servers()];
    if (node.kind === 'server') return (node.tools ?? []).map((t) => ({ kind: 'tool' as const, server: node.name, name: t.name, ...(t.description ? { description: t.description } : {}) }));
    return [];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === 'note') {
      const item = new vscode.TreeItem(node.text.split('\n')[0] ?? node.text);
      item.iconPath = new vscode.ThemeIcon('warning', new vscode.ThemeColor('problemsWarningIcon.foreground'));
      item.tooltip = node.text;
      return item;
    }
    if (node.kind === 'tool') {
      const item = new vscode.TreeItem(node.name);
      item.iconPath = new vscode.ThemeIcon('symbol-method');
      item.description = (node.description ?? '').split('\n')[0]?.slice(0, 80);
      item.tooltip = new vscode.MarkdownString(`**mcp_${node.server.toLowerCase().replace(/[^a-z0-9_]/g, '_')}.${node.name}**\n\n${node.description ?? ''}`);
      item.contextValue = 'tool';
      return item;
    }
    const count = node.tools ? `${node.tools.length} tools` : 'tools not listed yet';
    // "not-started" with known tools: listed earlier (cached); it starts on first use.
    const state = node.state === 'not-started' && node.tools ? 'idle' : node.state;
    const item = new vscode.TreeItem(node.name, node.tools?.length ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
    item.description = node.state === 'error' ? `error: ${node.error ?? ''}` : `${state} · ${count}`;
    const icon = { running: 'vm-running', error: 'error', disabled: 'circle-slash', starting: 'loading~spin' }[node.state] ?? 'server';
    item.iconPath = new vscode.ThemeIcon(icon);
    item.tooltip = new vscode.MarkdownString(`**${node.name}** · ${state}\n\n${node.description ?? ''}${node.error ? `\n\n${node.error}` : ''}`);
    item.contextValue = `server.${!node.enabled ? 'disabled' : node.state === 'error' ? 'error' : 'enabled'}`;
    item.id = `server:${node.name}`;
    return item;
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}

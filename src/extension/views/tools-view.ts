// The Tools view: every configured server with its state (not started, idle, running, error
// with its first clause beside it and the whole message in the tooltip, disabled, awaiting
// consent with a Review… action; enable/disable inline), its tools beneath by the names Python
// calls them (the sandbox's aliases) with descriptions and the Python call in the tooltip and a
// Copy Call action, the saved snippets, notes (settings set aside,
// workspace values awaiting consent), and the token meter's totals since this window started,
// per session beneath.
import * as vscode from 'vscode';
import type { CatalogServers } from '../../state/catalog-file.ts';
import { redactUrlSecrets } from '../../config/url-secrets.ts';
import type { Snippet } from '../../state/snippets.ts';
import type { ToolHint } from '../../bridge/catalog/tool-hints.ts';
import { errorClause, serverStateText, toolDescription, toolSummary } from './tool-summary.ts';
import type { StateFiles } from '../state-files.ts';
import { pythonCall, serverAliases, toolAliases } from './tool-call-text.ts';
import { METER_METHOD, meterTotals, totalsLine, totalsShort, type MeterTotals } from './meter-text.ts';

export interface ServerNode {
  kind: 'server';
  name: string;
  enabled: boolean;
  state: string;
  error?: string;
  /** What of its tool list was left out (a cap). */
  warning?: string;
  description?: string;
  tools?: ToolSummary[];
  /** The server's Python name in the sandbox (mcp_<alias>). */
  alias: string;
}
/** A tool as the view shows it: its title and hint (read-only, destructive) come from its server. */
export interface ToolSummary {
  name: string;
  title?: string;
  description?: string;
  hint?: ToolHint;
  /** The tool's name in Python (`get_sum` for `get-sum`): the sandbox's alias. */
  alias?: string;
  /** What the agent writes: `await mcp_<server>.<tool>(required=...)`, with the sandbox's aliases. */
  call?: string;
}
export interface ToolNode extends ToolSummary {
  kind: 'tool';
  server: string;
}
export interface NoteNode {
  kind: 'note';
  text: string;
  /** Clicking it opens the consent question. */
  review?: boolean;
}

/** Servers the user has not allowed (by name), and notes on workspace settings awaiting consent. */
export interface ConsentView {
  servers: Record<string, 'awaiting-consent' | 'declined'>;
  notes: string[];
}
/** The "Snippets" section and its entries (saved Python the model runs with run_snippet). */
export interface SnippetsNode {
  kind: 'snippets';
}
export interface SnippetNode {
  kind: 'snippet';
  snippet: Snippet;
}
/** The token meter's totals since this window started, and one session's beneath them. */
export interface MeterNode {
  kind: 'meter';
  totals: MeterTotals;
  sessions: Array<[string, MeterTotals]>;
}
export interface MeterSessionNode {
  kind: 'meter-session';
  session: string;
  totals: MeterTotals;
}
type Node = ServerNode | ToolNode | NoteNode | SnippetsNode | SnippetNode | MeterNode | MeterSessionNode;

export class ToolsView implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly files: StateFiles;
  private entries: Record<string, unknown> = {};
  private problems: string[] = [];
  private consent: ConsentView = { servers: {}, notes: [] };
  private snippets: Snippet[] = [];
  private readonly subscription: vscode.Disposable;
  private readonly runsSubscription: vscode.Disposable;
  /** When this window started: the meter's totals count the runs since. */
  readonly since = new Date().toISOString();
  private meterShown = '';

  constructor(files: StateFiles) {
    this.files = files;
    this.subscription = files.onDidChangeCatalog(() => this.changed.fire());
    // Runs change often (every tool call is a line): the view is redrawn only when the totals change.
    this.runsSubscription = files.onDidChangeRuns(() => {
      const shown = JSON.stringify(this.meter());
      if (shown === this.meterShown) return;
      this.meterShown = shown;
      this.changed.fire();
    });
  }

  /** The token meter's totals of the runs since this window started: all, and per session. */
  meter(): { all: MeterTotals; sessions: Array<[string, MeterTotals]> } {
    return meterTotals(this.files.runs(), this.since, this.files.owner);
  }

  setSettings(entries: Record<string, unknown>, problems: string[], consent: ConsentView = { servers: {}, notes: [] }): void {
    this.entries = entries;
    this.problems = problems;
    this.consent = consent;
    this.changed.fire();
  }

  refresh(): void {
    this.changed.fire();
  }

  setSnippets(snippets: Snippet[]): void {
    this.snippets = [...snippets].sort((a, b) => a.name.localeCompare(b.name));
    this.changed.fire();
  }

  snippetList(): readonly Snippet[] {
    return this.snippets;
  }

  servers(): ServerNode[] {
    const catalog: CatalogServers = this.files.catalog();
    const aliases = serverAliases(Object.keys(this.entries));
    return Object.entries(this.entries).map(([name, raw]) => {
      const alias = aliases.get(name)!;
      const entry = (raw ?? {}) as { enabled?: boolean; description?: string };
      const cached = catalog[name];
      const enabled = entry.enabled !== false;
      // Not allowed: its state is the question, and tools cached from before are not shown.
      const consent = enabled ? this.consent.servers[name] : undefined;
      if (consent)
        return {
          kind: 'server' as const,
          name,
          alias,
          enabled,
          state: consent,
          ...(entry.description ? { description: entry.description } : {}),
        };
      const toolAlias = toolAliases((cached?.tools ?? []).map((t) => t.name));
      return {
        kind: 'server' as const,
        name,
        alias,
        enabled,
        state: enabled ? (cached?.state ?? 'not-started') : 'disabled',
        // A catalog.json of an older bridge may still quote a URL with its credentials.
        ...(cached?.error && enabled ? { error: redactUrlSecrets(cached.error) } : {}),
        ...(cached?.warning && enabled ? { warning: redactUrlSecrets(cached.warning) } : {}),
        ...(entry.description ? { description: entry.description } : {}),
        ...(cached?.tools
          ? {
              tools: cached.tools.map((t) => {
                const python = toolAlias.get(t.name)!;
                return { ...toolSummary(t), alias: python, call: pythonCall(alias, python, t.inputSchema) };
              }),
            }
          : {}),
      };
    });
  }

  getChildren(node?: Node): Node[] {
    if (!node) {
      const notes = [
        ...this.problems.map((text) => ({ kind: 'note' as const, text })),
        ...this.consent.notes.map((text) => ({ kind: 'note' as const, text, review: true })),
      ];
      const { all, sessions } = this.meter();
      return [
        ...notes,
        ...this.servers(),
        ...(this.snippets.length > 0 ? [{ kind: 'snippets' as const }] : []),
        ...(all.runs > 0 ? [{ kind: 'meter' as const, totals: all, sessions }] : []),
      ];
    }
    if (node.kind === 'meter') return node.sessions.map(([session, totals]) => ({ kind: 'meter-session' as const, session, totals }));
    if (node.kind === 'snippets') return this.snippets.map((snippet) => ({ kind: 'snippet' as const, snippet }));
    if (node.kind === 'server') return (node.tools ?? []).map((t) => ({ ...t, kind: 'tool' as const, server: node.name }));
    return [];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === 'meter' || node.kind === 'meter-session') return meterItem(node);
    if (node.kind === 'note') {
      const item = new vscode.TreeItem(node.text.split('\n')[0] ?? node.text);
      item.iconPath = new vscode.ThemeIcon('warning', new vscode.ThemeColor('problemsWarningIcon.foreground'));
      item.tooltip = node.text;
      if (node.review) {
        item.iconPath = new vscode.ThemeIcon('shield');
        item.command = { command: 'codeExecutionMode.reviewConsent', title: 'Review…' };
        item.contextValue = 'consentNote';
      }
      return item;
    }
    if (node.kind === 'snippets') {
      const item = new vscode.TreeItem('Snippets', vscode.TreeItemCollapsibleState.Collapsed);
      item.description = `${this.snippets.length} saved · run_snippet(name, **kwargs)`;
      item.iconPath = new vscode.ThemeIcon('symbol-snippet');
      item.tooltip =
        'Python you saved from runs. The model finds them with search_tool_docs and runs them with await run_snippet(name, **kwargs).';
      item.contextValue = 'snippets';
      item.id = 'snippets';
      return item;
    }
    if (node.kind === 'snippet') {
      const { snippet } = node;
      const item = new vscode.TreeItem(snippet.name);
      item.iconPath = new vscode.ThemeIcon('symbol-snippet');
      item.description = `${snippet.origin === 'workspace' ? 'workspace · ' : ''}${snippet.description.split('\n')[0]?.slice(0, 80) ?? ''}`;
      item.tooltip = new vscode.MarkdownString(
        `**await run_snippet(${JSON.stringify(snippet.name)}${snippet.params ? `, ${snippet.params}` : ''})**\n\n`,
      ).appendText(`${snippet.description || '(no docstring)'}\n\n${snippet.path}`);
      item.command = { command: 'vscode.open', title: 'Open Snippet', arguments: [vscode.Uri.file(snippet.path)] };
      item.contextValue = `snippet.${snippet.origin}`;
      item.id = `snippet:${snippet.origin}:${snippet.name}`;
      return item;
    }
    if (node.kind === 'tool') {
      // Named as Python calls it; the server's own name, when it differs, is in the tooltip.
      const item = new vscode.TreeItem(node.alias ?? node.name);
      // The server's hint as a mark: a lock for read-only tools, a warning for destructive ones.
      item.iconPath =
        node.hint === 'destructive'
          ? new vscode.ThemeIcon('warning', new vscode.ThemeColor('problemsWarningIcon.foreground'))
          : new vscode.ThemeIcon(node.hint === 'read-only' ? 'lock' : 'symbol-method');
      item.description = toolDescription(node);
      // Server text is untrusted: the call goes in a code block, the rest as plain text.
      item.tooltip = new vscode.MarkdownString()
        .appendCodeblock(node.call ?? node.name, 'python')
        .appendText(
          `${node.alias && node.alias !== node.name ? `listed by its server as ${node.name}\n\n` : ''}` +
            `${node.title ? `${node.title}` : ''}${node.hint ? ` · ${node.hint}` : ''}\n\n${node.description ?? ''}`,
        );
      item.contextValue = 'tool';
      item.id = `tool:${node.server}:${node.name}`;
      return item;
    }
    if (node.state === 'awaiting-consent' || node.state === 'declined') return consentItem(node);
    const count = node.tools ? `${node.tools.length} tools` : 'tools not listed yet';
    const state = serverStateText(node.state, node.tools !== undefined);
    const item = new vscode.TreeItem(
      node.name,
      node.tools?.length ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None,
    );
    // An error's first clause fits beside the name; the whole message is in the tooltip.
    item.description = node.state === 'error' ? errorClause(node.error ?? '', node.name) : `${state} · ${count}`;
    const icon = { running: 'vm-running', error: 'error', disabled: 'circle-slash', starting: 'loading~spin' }[node.state] ?? 'server';
    item.iconPath = new vscode.ThemeIcon(icon, node.state === 'error' ? new vscode.ThemeColor('list.errorForeground') : undefined);
    item.tooltip = new vscode.MarkdownString(`\`mcp_${node.alias}\` · `).appendText(
      `${node.name} · ${state}\n\n${node.description ?? ''}${node.error ? `\n\n${node.error}` : ''}`,
    );
    if (node.warning) item.tooltip.appendText(`\n\n${node.warning}`);
    item.contextValue = `server.${!node.enabled ? 'disabled' : node.state === 'error' ? 'error' : 'enabled'}`;
    item.id = `server:${node.name}`;
    return item;
  }

  dispose(): void {
    this.subscription.dispose();
    this.runsSubscription.dispose();
    this.changed.dispose();
  }
}

/** The token meter's row: totals since this window started, or one session's. */
function meterItem(node: MeterNode | MeterSessionNode): vscode.TreeItem {
  const all = node.kind === 'meter';
  const item = new vscode.TreeItem(
    all ? 'Token meter' : `session ${node.session}`,
    all && node.sessions.length > 0 ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None,
  );
  const line = totalsLine(node.totals);
  // The row has room for a few words; the tooltip says it in full.
  item.description = all ? `since start: ${totalsShort(node.totals)}` : totalsShort(node.totals);
  item.iconPath = new vscode.ThemeIcon(all ? 'dashboard' : 'terminal');
  item.tooltip = new vscode.MarkdownString().appendText(
    `${all ? 'Since this window started, every session' : `Since this window started, session ${node.session}`}: ${line}.\n${METER_METHOD}`,
  );
  item.contextValue = node.kind;
  item.id = all ? 'meter' : `meter:${node.session}`;
  return item;
}

/** A server the user has not allowed: says so, and clicking it (or Review…) asks. */
function consentItem(node: ServerNode): vscode.TreeItem {
  const item = new vscode.TreeItem(node.name, vscode.TreeItemCollapsibleState.None);
  const waiting = node.state === 'awaiting-consent';
  item.description = waiting ? 'awaiting consent · Review…' : 'not allowed · Review…';
  item.iconPath = new vscode.ThemeIcon('shield');
  item.tooltip = new vscode.MarkdownString(
    `**${node.name}** · ${waiting ? 'awaiting your consent' : 'not allowed'}\n\nDefined by this workspace's settings: it is not started, searched or called until you allow it.${node.description ? `\n\n${node.description}` : ''}`,
  );
  item.command = { command: 'codeExecutionMode.reviewConsent', title: 'Review…', arguments: [node.name] };
  item.contextValue = 'server.awaiting';
  item.id = `server:${node.name}`;
  return item;
}

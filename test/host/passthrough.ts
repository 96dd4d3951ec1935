// Host checks of the passthrough, run by suite.ts in the real VS Code: a proxied server's
// requests to its client reach VS Code's own MCP client through the bridge.
// - server-everything's trigger-elicitation-request asks a 13-field form: VS Code shows it
//   (a notification, then one quick input per field), the form is answered in the page, and the
//   Python that called the tool gets the accepted content; the run log's relay record is shown
//   in the run panel and the Runs view's tooltip.
// - server-filesystem started without directories asks its client for roots: VS Code's
//   workspace folder is its root, and Python reads a file of that folder through it.
// - The Tools view as VS Code gets it: server-everything's tools named as Python calls them,
//   and a server that fails to start shown by its error's first clause, in red.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { parseEvents } from '../../src/state/run-log/reader.ts';
import type { ExtensionApi } from '../../src/extension/extension.ts';
import type { HostKit } from './consent.ts';
import { fixtureProgram } from '../helpers/fixtures.ts';

/** The page actions of suite.ts (see test/host/run.mjs). */
type Ui = (
  steps: Array<
    | { waitFor: string; text?: string; webview?: boolean; timeoutMs?: number }
    | { click: string; text?: string }
    | { type: string }
    | { press: string }
    | { waitMs: number }
  >,
) => Promise<void>;

// server-everything's form, in its order: the title VS Code shows for each field, and what is typed
// (or, in a multiple choice, the row clicked) before Enter; nothing: Enter takes the first item,
// which is the default, "true", or "skip". A multiple choice needs the click: left as shown,
// VS Code answers it with the previous field's choice (which the bridge refuses as invalid).
const FORM: Array<[title: string, typed?: string, added?: string]> = [
  ['String', 'Ada Lovelace'],
  ['Boolean'],
  ['String with default'],
  ['String with email format'],
  ['String with uri format'],
  ['String with date format'],
  ['Integer'],
  ['Number in range 1-1000'],
  ['Untitled Single Select Enum'],
  ['Untitled Multiple Select Enum', undefined, 'Piano'],
  ['Titled Single Select Enum'],
  ['Titled Multiple Select Enum', undefined, 'fish-2'],
  ['Legacy Titled Single Select Enum'],
];

export async function passthroughChecks(kit: HostKit, ext: ExtensionApi, repo: string, ui: Ui): Promise<void> {
  const { check, waitFor, invoke, startBridge } = kit;
  const assert: HostKit['assert'] = kit.assert;
  const settings = vscode.workspace.getConfiguration('codeExecutionMode');
  const everything = join(repo, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
  const filesystem = join(repo, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? '';
  const note = join(folder, 'passthrough-note.txt');
  const before = { ...(settings.get<Record<string, unknown>>('servers') ?? {}) };
  try {
    await check('passthrough: server-everything and server-filesystem (no directories) proxied through the settings', async () => {
      assert(folder, 'no workspace folder is open');
      await settings.update(
        'servers',
        {
          ...before,
          everything: { command: process.execPath, args: [everything, 'stdio'], description: 'MCP reference server' },
          // No directory arguments: its only roots are what its client (the bridge, relaying VS Code) gives.
          fs: { command: process.execPath, args: [filesystem], description: 'Files of the roots it is given' },
        },
        vscode.ConfigurationTarget.Global,
      );
      assert(!ext.config().roots?.length, `configured roots: ${JSON.stringify(ext.config().roots)}`);
      await waitFor(
        'the restarted bridge to know both servers',
        async () => {
          await startBridge();
          const out = await invoke('sorted(s["name"] for s in discovered_servers())');
          return out.includes("'everything'") && out.includes("'fs'") ? out : undefined;
        },
        90_000,
      );
    });

    await check("passthrough: the Tools view names server-everything's tools as Python calls them (get-sum as get_sum)", async () => {
      const server = await waitFor("everything's tools in the Tools view", async () => {
        await vscode.commands.executeCommand('codeExecutionMode.refreshTools');
        return ext.tools.servers().find((s) => s.name === 'everything' && s.tools?.some((t) => t.name === 'get-sum'));
      });
      const row = ext.tools.getTreeItem(server);
      assert(/^(running|idle) · \d+ tools$/.test(String(row.description)), `description: ${String(row.description)}`);
      const tool = ext.tools.getChildren(server).find((n) => n.kind === 'tool' && n.name === 'get-sum');
      assert(tool, 'get-sum is not among its rows');
      const item = ext.tools.getTreeItem(tool);
      assert(item.label === 'get_sum', `label: ${String(item.label)}`);
      assert((item.tooltip as vscode.MarkdownString).value.includes('mcp_everything.get_sum('), 'the tooltip lacks the Python call');
    });

    await check("passthrough: server-everything's elicitation answered in VS Code's own UI; Python gets the accepted content", async () => {
      const code = 'r = await mcp_everything.trigger_elicitation_request()\nprint("\\n".join(r) if isinstance(r, list) else r)';
      const pending = invoke(code);
      await waitFor('the run to start', () => ext.runs.runs().find((r) => r.code === code), 30_000);
      await kit.sleep(1000);
      await vscode.commands.executeCommand('notifications.showList');
      const steps: Parameters<Ui>[0] = [
        {
          waitFor: '.notifications-center .notification-list-item',
          text: 'MCP server "everything" asks: Please provide inputs',
          timeoutMs: 60_000,
        },
        { click: '.notifications-center .monaco-button', text: 'Respond' },
      ];
      for (const [title, typed, added] of FORM) {
        steps.push({ waitFor: '.quick-input-widget .quick-input-title', text: title });
        if (typed) steps.push({ type: typed });
        if (added) steps.push({ click: '.quick-input-widget .monaco-list-row', text: added });
        steps.push({ waitMs: 250 }, { press: 'Enter' });
      }
      await ui(steps);
      const text = await pending;
      await vscode.commands.executeCommand('notifications.hideList');
      assert(text.includes('User provided the requested information'), `result: ${text}`);
      for (const line of ['- Name: Ada Lovelace', '- Agreed to terms: true', '- Favorite Integer: 42', '- Favorite Number: 3.14']) {
        assert(text.includes(line), `"${line}" is not in the result: ${text}`);
      }
      // The raw answer (as printed; unescaped should it come as JSON) has the defaults taken and the rows clicked.
      const raw = text.replace(/\\"/g, '"');
      for (const part of [
        '"action": "accept"',
        '"Piano"',
        '"fish-2"',
        '"titledSingleSelectEnum": "hero-1"',
        '"legacyTitledEnum": "pet-1"',
      ]) {
        assert(raw.includes(part), `${part} is not in the raw result: ${text}`);
      }
      const run = await waitFor(
        'the run with its relay record',
        () => ext.runs.runs().find((r) => r.code === code && r.status === 'ok' && r.relays.length > 0),
        15_000,
      );
      // The elicitation is the run's; a roots/list the server asks while it starts beside the run
      // (after a settings change) belongs to the run too, answered.
      const elicitations = run.relays.filter((r) => r.method === 'elicitation/create');
      const relay = elicitations[0]!;
      assert(
        run.relays.every((r) => r.outcome === 'answered' && (r.method === 'elicitation/create' || r.method === 'roots/list')),
        `relays: ${JSON.stringify(run.relays)}`,
      );
      assert(
        elicitations.length === 1 &&
          relay.server === 'everything' &&
          relay.method === 'elicitation/create' &&
          relay.outcome === 'answered' &&
          relay.action === 'accept',
        `relays: ${JSON.stringify(run.relays)}`,
      );
      assert(relay.waitedMs > 0, `waited ${relay.waitedMs} ms`);
      const tooltip = ext.runs.getTreeItem({ kind: 'run', run }).tooltip as vscode.MarkdownString;
      const said = run.relays.length === 1 ? '1 request from servers' : `${run.relays.length} requests from servers`;
      assert(tooltip.value.includes(said), `tooltip: ${tooltip.value}`);
      // The run panel's table (its Export JSON writes the same record, relays included).
      await vscode.commands.executeCommand('codeExecutionMode.openRun', run.id);
      const panel = await waitFor('the panel for that run', () => (ext.panel()?.run.id === run.id ? ext.panel() : undefined), 10_000);
      assert(panel.run.relays.length === run.relays.length, "the panel does not have the run's relays");
      await ui([
        { waitFor: 'h2', text: 'Requests from servers', webview: true },
        { waitFor: 'table.relays td', text: 'answered (accept)', webview: true },
        { waitFor: 'table.relays td', text: 'elicitation/create', webview: true },
      ]);
    });

    await check("passthrough: server-filesystem started without directories gets VS Code's workspace folder as its root", async () => {
      const content = `written for the roots check ${Date.now()}`;
      writeFileSync(note, content);
      // The server asks for roots once its client is initialized: until it has them, it has no directories.
      const out = await waitFor(
        'the workspace folder among the allowed directories',
        async () => {
          const text = await invoke(
            `print(await mcp_fs.list_allowed_directories())\nprint(await mcp_fs.read_text_file(path=${JSON.stringify(note)}))`,
          );
          return text.includes(content) ? text : undefined;
        },
        30_000,
      );
      assert(out.includes(folder), `allowed directories: ${out}`);
      // The bridge relayed VS Code's answer, and the log says so: asked of the client (configured
      // roots, of which there are none, would be answered at once, with no wait).
      const relays = parseEvents(readFileSync(join(ext.stateDir, 'runs.jsonl'), 'utf8')).filter(
        (e) => e.type === 'relay' && e.server === 'fs' && e.method === 'roots/list',
      );
      assert(
        relays.some((e) => e.type === 'relay' && e.outcome === 'answered' && e.waitedMs > 0),
        `relay lines: ${JSON.stringify(relays)}`,
      );
    });

    await check("passthrough: a server that fails to start shows its error's first clause in the Tools view, in red", async () => {
      const fixture = fixtureProgram('fixture', repo);
      const servers = settings.get<Record<string, unknown>>('servers') ?? {};
      await settings.update(
        'servers',
        { ...servers, broken: { command: process.execPath, args: [fixture, '--fail-start'], description: 'Fails on purpose' } },
        vscode.ConfigurationTarget.Global,
      );
      const server = await waitFor(
        'broken in error in the Tools view',
        async () => {
          // The view shows the states of this window's bridge: started with the new list, it tries every server.
          await startBridge();
          await invoke('len(discovered_servers())');
          return ext.tools.servers().find((s) => s.name === 'broken' && s.state === 'error');
        },
        90_000,
      );
      const row = ext.tools.getTreeItem(server);
      const description = String(row.description);
      assert(description && !description.includes('broken') && !description.includes(':'), `description: ${description}`);
      const error = server.error ?? '';
      assert(error.startsWith(`server "broken" ${description}`), `description ${description} of ${error}`);
      // The tooltip has the whole message (as Markdown text: spaces and punctuation escaped).
      const tooltip = (row.tooltip as vscode.MarkdownString).value.replace(/&nbsp;/g, ' ').replace(/\\(.)/g, '$1');
      assert(tooltip.includes(error), `tooltip: ${tooltip}`);
      const icon = row.iconPath as vscode.ThemeIcon;
      assert(icon.id === 'error' && icon.color?.id === 'list.errorForeground', `icon: ${icon.id} ${icon.color?.id}`);
    });
  } finally {
    rmSync(note, { force: true });
    await settings.update('servers', before, vscode.ConfigurationTarget.Global);
  }
}

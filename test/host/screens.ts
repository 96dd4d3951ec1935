// Host checks of how the extension looks, run by suite.ts in the real VS Code: real runs that
// call proxied tools, then, in each of VS Code's built-in themes (light, dark, high contrast
// dark and light), the Runs and Tools views with the run panel, Diagnose, the status bar item's
// hover, the walkthrough with its steps done, and a confirmation (its notification and choice). With `--screenshots images` the runner saves
// them in images/themes/ and the walkthrough's own pictures in images/walkthrough/; without, the
// same steps still run. At a 1280x800 window the run panel and Diagnose scroll no way sideways
// and the rows show their labels whole. Theme, window and servers are put back afterwards.
import * as vscode from 'vscode';
import type { ExtensionApi } from '../../src/extension/extension.ts';
import { readCatalogSections } from '../../src/state/catalog-file.ts';
import { waitingForConfirmation } from '../../src/state/run-log/reader.ts';
import { processAlive } from '../../src/shared/process-alive.ts';
import type { HostKit } from './consent.ts';

/** The page actions of suite.ts (see test/host/run.mjs). */
type Ui = (
  steps: Array<
    | { waitFor: string; text?: string; webview?: boolean; timeoutMs?: number }
    | { click: string; text?: string }
    | { hover: string; text?: string }
    | { press: string }
    | { screenshot: string; clip?: string[]; margin?: number }
    | { viewport: { width: number; height: number } }
    | { fits: string; webview: true }
    | { shows: string; text: string }
    | { waitMs: number }
  >,
) => Promise<void>;

/** VS Code's built-in themes, by the name the walkthrough's image object gives each kind. */
const THEMES = [
  { key: 'light', id: 'Light 2026', kind: vscode.ColorThemeKind.Light },
  { key: 'dark', id: 'Dark 2026', kind: vscode.ColorThemeKind.Dark },
  { key: 'hc', id: 'Default High Contrast', kind: vscode.ColorThemeKind.HighContrast },
  { key: 'hcLight', id: 'Default High Contrast Light', kind: vscode.ColorThemeKind.HighContrastLight },
] as const;

const WINDOW = { width: 1440, height: 900 };
const WALKTHROUGH = 'code-execution-mode.code-execution-mode#codeExecutionMode.start';

// The runs the pictures show: tool calls of two servers, and an error.
const GRAPH_RUN = [
  '# Who is in the memory graph?',
  'await mcp_memory.create_entities(entities=[{"name": "Ada", "entityType": "person", "observations": ["first programmer"]}])',
  'graph = await mcp_memory.read_graph()',
  'print(len(graph["entities"]), "entities")',
  'sorted(e["name"] for e in graph["entities"])',
].join('\n');
const SUM_RUN = 'await mcp_fixture.add(a=20, b=22)';
const ERROR_RUN = 'import json\njson.loads("{not json")';

export async function screensChecks(
  kit: HostKit,
  ext: ExtensionApi,
  ui: Ui,
  paths: { memoryServer: string; fixtureServer: string },
): Promise<void> {
  const { check, waitFor, invoke, startBridge } = kit;
  const assert: HostKit['assert'] = kit.assert;
  const settings = vscode.workspace.getConfiguration('codeExecutionMode');
  const workbench = vscode.workspace.getConfiguration('workbench');
  const servers = settings.get<Record<string, unknown>>('servers') ?? {};
  const openGraphRun = async () => {
    const run = ext.runs.runs().find((r) => r.code === GRAPH_RUN && r.status === 'ok');
    assert(run, 'the graph run is not in the Runs view');
    await vscode.commands.executeCommand('codeExecutionMode.openRun', run.id);
    await waitFor('the panel for the graph run', () => (ext.panel()?.run.id === run.id ? true : undefined), 10_000);
    // Focus in the panel, as after a click in it: a focused row in the views shows its inline actions.
    await vscode.commands.executeCommand('workbench.action.focusActiveEditorGroup');
  };
  // What a user reads in the rows at the default sidebar width: a run's line up to the server it
  // calls (the rest is in the tooltip), a short line whole, a server's state, a tool's name.
  const rows = [
    { shows: '.part.sidebar .monaco-list-row .label-name', text: 'await mcp_memory' },
    { shows: '.part.sidebar .monaco-list-row .label-name', text: 'json.loads("{not json")' },
    { shows: '.part.sidebar .monaco-list-row .label-description', text: 'running · 9 tools' },
    { shows: '.part.sidebar .monaco-list-row .label-name', text: 'create_relations' },
  ] as const;
  try {
    await check('screens: real runs that call two proxied servers, and one that fails, fill the views', async () => {
      await settings.update(
        'servers',
        {
          memory: {
            command: process.execPath,
            args: [paths.memoryServer],
            env: { MEMORY_FILE_PATH: `${ext.stateDir}/memory.jsonl` },
            description: 'Knowledge graph memory',
          },
          // echo asks first: the confirmation's pictures.
          fixture: { command: process.execPath, args: [paths.fixtureServer], description: 'Test fixture', confirmTools: ['echo'] },
        },
        vscode.ConfigurationTarget.Global,
      );
      // Until the running bridge has read the new list, mcp_fixture is not defined yet.
      await waitFor(
        'both servers in the bridge',
        async () => {
          await startBridge();
          const out = await invoke('sorted(s["name"] for s in discovered_servers())').catch(() => '');
          return out.includes("['fixture', 'memory']") ? out : undefined;
        },
        90_000,
      );
      await waitFor('the sandbox to be ready', () => (ext.runtime.text.includes(': ready') ? true : undefined), 60_000).catch(() =>
        assert(false, `status bar: ${ext.runtime.text}`),
      );
      // Only these runs in the view (the run log keeps the rest).
      await ext.runs.clear();
      for (const code of [GRAPH_RUN, SUM_RUN, ERROR_RUN]) await invoke(code);
      await waitFor('the three runs in the Runs view', () => (ext.runs.runs().filter((r) => r.status).length === 3 ? true : undefined));
      await vscode.commands.executeCommand('codeExecutionMode.refreshTools');
      // On a timeout, the last view and what each writer of catalog.json said (the view's source).
      await waitFor('both servers running in the Tools view', async () => {
        const shown = ext.tools.servers();
        if (shown.filter((s) => s.state === 'running' && (s.tools?.length ?? 0) > 0).length === 2) return true;
        const sections = await readCatalogSections(ext.stateDir);
        throw new Error(
          `view: ${shown.map((s) => `${s.name} ${s.state} ${s.tools?.length ?? 0} tools`).join(', ')}; catalog.json: ${sections
            .map(
              ([id, w]) =>
                `${id} (owner ${w.owner ?? '-'}, ${processAlive(w.pid) ? 'alive' : 'gone'}, ${w.updatedAt}): ${Object.entries(w.servers)
                  .map(([name, e]) => `${name} ${e.state ?? '-'} ${e.tools?.length ?? 0} tools`)
                  .join(', ')}`,
            )
            .join('; ')}`,
        );
      });
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      await vscode.commands.executeCommand('workbench.view.extension.codeExecutionMode');
      await openGraphRun();
      // The run's tool calls and the memory server's tools, unfolded as a user would. A view that
      // refreshes just then can leave a row unfolded without its children: a click more folds
      // it, the next unfolds it again.
      const unfold = async (row: string, child: string) => {
        for (let attempt = 1; ; attempt++) {
          try {
            await ui([
              { click: `.part.sidebar .monaco-list-row:has-text(${JSON.stringify(row)}) .monaco-tl-twistie` },
              { waitFor: '.part.sidebar .monaco-list-row .label-name', text: child, timeoutMs: 5000 },
            ]);
            return;
          } catch (error) {
            if (attempt === 5) throw error;
          }
        }
      };
      await unfold('await mcp_memory', 'memory.read_graph');
      await unfold('running · 9 tools', 'create_relations');
    });

    // Every theme when the screenshots are saved (`npm run screenshots`); else high contrast alone,
    // the theme that showed the most (buttons without borders, unreadable code, a missing icon).
    for (const theme of process.env.CEM_HOST_SCREENSHOTS ? THEMES : THEMES.filter((t) => t.key === 'hc')) {
      await check(`screens: the views, the run panel, Diagnose, the status bar and the walkthrough in ${theme.id}`, async () => {
        await workbench.update('colorTheme', theme.id, vscode.ConfigurationTarget.Global);
        await waitFor(`the ${theme.id} theme`, () => (vscode.window.activeColorTheme.kind === theme.kind ? true : undefined), 20_000);
        await vscode.commands.executeCommand('notifications.clearAll');
        await openGraphRun();
        await ui([
          { waitFor: '#copy', webview: true },
          // The mouse away from the rows (their inline actions show on hover), on the status bar's empty middle.
          { hover: '.part.statusbar' },
          { waitMs: 1500 },
          { screenshot: `themes/run-${theme.key}` },
          // The status bar item with its hover.
          { hover: '.part.statusbar .statusbar-item', text: ': ready' },
          { waitFor: '.workbench-hover', text: 'Click for the full report' },
          { waitMs: 300 },
          {
            screenshot: `themes/status-bar-${theme.key}`,
            clip: ['.part.statusbar .statusbar-item:has-text(": ready")', '.workbench-hover'],
            margin: 12,
          },
          { hover: '.part.statusbar' },
        ]);
        await vscode.commands.executeCommand('codeExecutionMode.diagnoseRuntime');
        await waitFor('the report to say ready', () => (ext.diagnosePanel()?.title === 'Sandbox: ready' ? true : undefined), 60_000);
        await ui([{ waitFor: '.verdict.ok', webview: true }, { waitMs: 1000 }, { screenshot: `themes/diagnose-${theme.key}` }]);
        await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
        // The walkthrough's own picture of this theme: the views and the run panel in a small window.
        await openGraphRun();
        await ui([
          { viewport: { width: 1000, height: 620 } },
          { waitFor: '#copy', webview: true },
          { waitMs: 1500 },
          { screenshot: `walkthrough/try-${theme.key}` },
          { viewport: WINDOW },
        ]);
        // The walkthrough, its four steps done by their context keys in this real run.
        await vscode.commands.executeCommand('workbench.action.openWalkthrough', WALKTHROUGH, false);
        await ui([
          ...['Check the sandbox', 'Prepare the sandbox image', 'Add your MCP servers', 'Try it'].map((title) => ({
            waitFor: 'button.getting-started-step[aria-checked="true"]',
            text: title,
          })),
          { click: 'button.getting-started-step', text: 'Try it' },
          { waitMs: 1500 },
          { screenshot: `themes/walkthrough-${theme.key}` },
        ]);
        await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
      });
    }

    // Apart from the loop above, so that its pictures show the three runs alone.
    for (const theme of process.env.CEM_HOST_SCREENSHOTS ? THEMES : THEMES.filter((t) => t.key === 'hc')) {
      await check(`screens: a confirmation, its notification and its choice, in ${theme.id}`, async () => {
        await workbench.update('colorTheme', theme.id, vscode.ConfigurationTarget.Global);
        await waitFor(`the ${theme.id} theme`, () => (vscode.window.activeColorTheme.kind === theme.kind ? true : undefined), 20_000);
        await vscode.commands.executeCommand('notifications.clearAll');
        const code = `await mcp_fixture.echo(message="allowed in ${theme.key}")`;
        const pending = invoke(code);
        await waitFor(
          'the run to wait for confirmation',
          () => ext.runs.runs().find((r) => r.code === code && waitingForConfirmation(r)),
          30_000,
        );
        await vscode.commands.executeCommand('notifications.showList');
        const question = '.notifications-center .notification-list-item';
        await ui([
          { waitFor: question, text: 'wants to call the tool fixture.echo' },
          { waitMs: 500 },
          { screenshot: `themes/confirmation-${theme.key}`, clip: [question, '.part.statusbar'], margin: 8 },
          { click: '.notifications-center .monaco-button', text: 'Respond' },
          { waitFor: '.quick-input-widget .quick-input-title', text: 'Allow fixture.echo for' },
          { waitMs: 300 },
          { screenshot: `themes/confirmation-choice-${theme.key}`, clip: ['.quick-input-widget'], margin: 8 },
          // Enter takes the first choice: this call only.
          { press: 'Enter' },
        ]);
        const text = await pending;
        await vscode.commands.executeCommand('notifications.hideList');
        assert(text.includes(`allowed in ${theme.key}`), `result: ${text}`);
      });
    }

    await check('screens: at 1280x800 the run panel and Diagnose scroll no way sideways, and the rows show their labels', async () => {
      await openGraphRun();
      await ui([
        { viewport: { width: 1280, height: 800 } },
        { waitFor: '#copy', webview: true },
        { waitMs: 1000 },
        { fits: '#copy', webview: true },
        ...rows,
        { screenshot: 'themes/run-1280x800' },
      ]);
      await vscode.commands.executeCommand('codeExecutionMode.diagnoseRuntime');
      await waitFor('the report to say ready', () => (ext.diagnosePanel()?.title === 'Sandbox: ready' ? true : undefined), 60_000);
      await ui([
        { waitFor: '.verdict.ok', webview: true },
        { waitMs: 1000 },
        { fits: '.verdict', webview: true },
        { screenshot: 'themes/diagnose-1280x800' },
      ]);
      await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    });
  } finally {
    await ui([{ viewport: WINDOW }]).catch(() => undefined);
    await workbench.update('colorTheme', undefined, vscode.ConfigurationTarget.Global);
    await settings.update('servers', servers, vscode.ConfigurationTarget.Global);
  }
}

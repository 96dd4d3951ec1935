// Host checks of the token meter: after a real run that calls a proxied tool and keeps its large
// result in the sandbox, the Runs view's tooltip (hovered in VS Code's own UI) and the run panel
// show what the model got, what stayed in the sandbox and what a direct listing would cost, and
// the Tools view adds it up since the window started, per session.
import * as vscode from 'vscode';
import type { ExtensionApi } from '../../src/extension/extension.ts';
import { escapeHtml } from '../../src/extension/panels/html.ts';
import { meterPhrases } from '../../src/extension/views/meter-text.ts';
import type { HostKit } from './consent.ts';

type UiStep =
  | { waitFor: string; text?: string; webview?: boolean; timeoutMs?: number }
  | { hover: string; text?: string; timeoutMs?: number }
  | { waitMs: number }
  | { screenshot: string };

export async function meterChecks(
  kit: HostKit,
  ext: ExtensionApi,
  fixtureServer: string,
  ui: (steps: UiStep[]) => Promise<void>,
): Promise<void> {
  const { check, waitFor, invoke } = kit;
  const assert: HostKit['assert'] = kit.assert;
  const settings = vscode.workspace.getConfiguration('codeExecutionMode');
  const servers = settings.get<Record<string, unknown>>('servers') ?? {};
  try {
    await check('the Runs tooltip, the run panel and the Tools view show the token meter of a run that calls a proxied tool', async () => {
      // A server of its own, added while the bridge runs (applied live).
      await settings.update(
        'servers',
        { ...servers, meterfix: { command: process.execPath, args: [fixtureServer], description: 'token meter check' } },
        vscode.ConfigurationTarget.Global,
      );
      const code = 'meter_doc = await mcp_meterfix.big(size=20000)\nlen(meter_doc)';
      const text = await waitFor(
        'the run that calls meterfix',
        async () => {
          const out = await invoke(code).catch(() => '');
          return out.includes('Out: 20000') ? out : undefined;
        },
        90_000,
      );
      const run = await waitFor('the metered run in the Runs view', () =>
        ext.runs.runs().find((r) => r.code === code && r.status === 'ok' && r.meter),
      );
      const meter = run.meter!;
      assert(meter.modelChars === text.length, `the model got ${text.length} characters, the meter says ${meter.modelChars}`);
      assert(meter.keptBytes > 19_000 && meter.toolsUsed === 1 && meter.listingTokens > 0, `meter: ${JSON.stringify(meter)}`);

      // The Runs view's tooltip: its data, then as VS Code shows it on hover.
      // Lines added with appendText keep their spaces as &nbsp; and escape Markdown: read back as text.
      const tooltip = (ext.runs.getTreeItem({ kind: 'run', run }).tooltip as vscode.MarkdownString).value
        .replace(/&nbsp;/g, ' ')
        .replace(/\\(.)/g, '$1');
      for (const part of [
        '**Token meter**: the model got',
        'of tool results stayed in the sandbox',
        'a direct listing of the 1 tool used ≈',
        'tokens are estimated',
      ])
        assert(tooltip.includes(part), `the tooltip lacks "${part}": ${tooltip}`);
      await vscode.commands.executeCommand('workbench.view.extension.codeExecutionMode');
      // A row the view redraws under the mouse (a run ending meanwhile) shows no hover: move away and hover again.
      for (let attempt = 1; ; attempt++) {
        try {
          await ui([
            { hover: '.monaco-list-row', text: 'meter_doc = await mcp_meterfix.big' },
            { waitFor: '.monaco-hover, .workbench-hover', text: 'stayed in the sandbox', timeoutMs: 10_000 },
          ]);
          break;
        } catch (error) {
          if (attempt === 4) throw error;
          await ui([{ hover: '.part.statusbar' }]);
        }
      }
      // Saved only when the runner is given --screenshots.
      await ui([{ waitMs: 500 }, { screenshot: 'token-meter-tooltip' }]);

      // The run panel: a Token meter section with the three figures and how they are counted.
      await vscode.commands.executeCommand('codeExecutionMode.openRun', run.id);
      const panel = await waitFor('the panel for that run', () => (ext.panel()?.run.id === run.id ? ext.panel() : undefined), 15_000);
      assert(panel.page.includes('<h2>Token meter</h2>'), 'the panel has no Token meter section');
      const { model, kept, listing } = meterPhrases(meter);
      for (const phrase of [model, kept, listing]) assert(panel.page.includes(escapeHtml(phrase)), `the panel lacks "${phrase}"`);
      await ui([
        { waitFor: 'table.meter td', text: 'stayed in the sandbox', webview: true, timeoutMs: 30_000 },
        { waitMs: 500 },
        { screenshot: 'token-meter-panel' },
      ]);

      // The Tools view: totals since the window started, and per session beneath.
      const node = await waitFor('the Token meter in the Tools view', () => {
        const found = ext.tools.getChildren().find((n) => n.kind === 'meter');
        return found?.kind === 'meter' && found.totals.keptBytes >= meter.keptBytes ? found : undefined;
      });
      const row = ext.tools.getTreeItem(node);
      assert(
        row.label === 'Token meter' && String(row.description).startsWith('since start: '),
        `row: ${String(row.label)} ${String(row.description)}`,
      );
      const session = ext.tools.getChildren(node).find((n) => n.kind === 'meter-session' && n.session === run.session);
      assert(
        session?.kind === 'meter-session' && session.totals.runs >= 1,
        `sessions: ${JSON.stringify(node.sessions.map(([name]) => name))}`,
      );
    });
  } finally {
    await settings.update('servers', servers, vscode.ConfigurationTarget.Global);
  }
}

// Host checks of the WebAssembly sandbox, run by suite.ts in the real VS Code with the container
// runtimes hidden (their paths set to files that do not exist, in the user settings): the status
// bar says "WASM sandbox", the walkthrough's sandbox steps are done, Diagnose reports it in use,
// and run_python and Run Selection run Python in it, calling the proxied server; the Runs view
// and the run panel name it. The settings are restored afterwards.
import * as vscode from 'vscode';
import type { ExtensionApi } from '../../src/extension/extension.ts';
import { sandboxSteps } from '../../src/extension/walkthrough-steps.ts';
import type { HostKit } from './consent.ts';

export async function wasmChecks(kit: HostKit, ext: ExtensionApi): Promise<void> {
  const { check, waitFor, startBridge, invoke } = kit;
  const assert: HostKit['assert'] = kit.assert;
  const settings = vscode.workspace.getConfiguration('codeExecutionMode');
  try {
    await check('no container runtime: the status bar says WASM sandbox, and the walkthrough steps are done', async () => {
      await settings.update('sandbox.backend', 'auto', vscode.ConfigurationTarget.Global);
      await settings.update('sandbox.podmanPath', '/nonexistent/podman', vscode.ConfigurationTarget.Global);
      await settings.update('sandbox.dockerPath', '/nonexistent/docker', vscode.ConfigurationTarget.Global);
      await waitFor(
        'the status bar to say WASM sandbox',
        () => (ext.runtime.text === '$(vm) WASM sandbox' ? true : undefined),
        60_000,
      ).catch(() => assert(false, `status bar: ${ext.runtime.text}`));
      const report = ext.runtime.report;
      assert(report?.wasm?.ready && !report.chosen, `report: ${JSON.stringify(report?.wasm)}`);
      const steps = sandboxSteps(report);
      assert(steps.runtimeReady && steps.imagePresent, `walkthrough steps: ${JSON.stringify(steps)}`);
    });

    await check('no container runtime: Diagnose reports the WebAssembly sandbox in use, and why', async () => {
      await vscode.commands.executeCommand('codeExecutionMode.diagnoseRuntime');
      const panel = await waitFor('the report', () => (ext.diagnosePanel()?.report?.wasm ? ext.diagnosePanel() : undefined), 60_000);
      assert(panel.title === 'Sandbox: WebAssembly', `title: ${panel.title}`);
      assert(panel.html.includes('data-runtime="wasm" data-state="ready"'), 'no WebAssembly section');
      assert(/WebAssembly <span class="state ok">ready<\/span> <span class="in-use">in use<\/span>/.test(panel.html), 'not shown in use');
      assert(panel.html.includes('install Podman'), 'the way to containers is not said');
      assert(panel.html.includes('data-runtime="podman"'), 'the runtimes checked are not shown');
      await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    });

    await check('no container runtime: run_python runs Python in WebAssembly calling the proxied server', async () => {
      const text = await waitFor(
        'the restarted bridge to run in WebAssembly',
        async () => {
          await startBridge();
          // The settings just changed three times: a call sent while VS Code restarts the server
          // can go unanswered, so it is bounded and sent again.
          const out = await invoke(
            [
              'import sys',
              'await mcp_memory.create_entities(entities=[{"name": "Wasm", "entityType": "test", "observations": ["ran"]}])',
              'graph = await mcp_memory.read_graph()',
              '(sys.platform, "Wasm" in [e["name"] for e in graph["entities"]])',
            ].join('\n'),
            {},
            45_000,
          ).catch(() => '');
          return out.includes('emscripten') ? out : undefined;
        },
        120_000,
      );
      assert(text.includes("('emscripten', True)"), `result: ${text}`);
      const run = await waitFor('the run in the Runs view', () => ext.runs.runs().find((r) => r.code.includes('"Wasm"') && r.status));
      assert(run.status === 'ok', `status: ${run.status}`);
      assert(run.sandbox?.isolation === 'wasm', `sandbox: ${JSON.stringify(run.sandbox)}`);
      await vscode.commands.executeCommand('codeExecutionMode.openRun', run.id);
      const panel = await waitFor('the run panel', () => (ext.panel()?.run.id === run.id ? ext.panel() : undefined), 10_000);
      assert(panel.page.includes('WebAssembly sandbox'), 'the run panel does not name the sandbox');
    });

    await check('no container runtime: Run Selection runs in the same WebAssembly session', async () => {
      await invoke('wasm_marker = 6');
      const code = 'wasm_marker * 7';
      const document = await vscode.workspace.openTextDocument({ language: 'python', content: `${code}\n` });
      const editor = await vscode.window.showTextDocument(document);
      editor.selection = new vscode.Selection(0, 0, 0, code.length);
      await waitFor('the editor to be active', () => (vscode.window.activeTextEditor?.document === document ? true : undefined), 10_000);
      // Not awaited: a question the command might ask would hold the suite; the run is waited for instead.
      const command = vscode.commands.executeCommand('codeExecutionMode.runSelection');
      const run = await waitFor('the selection in the Runs view', () => ext.runs.runs().find((r) => r.code === code && r.status));
      await command;
      assert(run.status === 'ok' && run.value === '42', `${run.status} ${run.value} ${run.error?.message ?? ''}`);
      await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
    });
  } finally {
    await settings.update('sandbox.podmanPath', undefined, vscode.ConfigurationTarget.Global);
    await settings.update('sandbox.dockerPath', undefined, vscode.ConfigurationTarget.Global);
    await settings.update('sandbox.backend', 'container', vscode.ConfigurationTarget.Global);
  }
}

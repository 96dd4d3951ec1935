// Host checks of the sandbox's network questions, run by suite.ts in the real VS Code: with
// codeExecutionMode.sandbox.network.ask on in the USER settings, run_python fetches
// http://localhost:PORT/ of a loopback server of the check's own (localhost resolves from the
// hosts file: no name server is asked). VS Code's question names localhost:PORT while the status
// bar and the extension's notification say that it waits; declined in VS Code's own UI, Python
// gets a 403 saying so; "always", picked in the form, adds localhost:PORT to the user's
// sandbox.network.allow with a notification whose Undo takes it out again (the proxy still refuses
// localhost as a loopback address, which is what Python sees); the run panel's Network section
// lists each request with its decision, and the Runs view's row says what a waiting run waits for.
// Every setting is restored after.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as vscode from 'vscode';
import { waitingForNetworkQuestion } from '../../src/state/run-log/reader.ts';
import type { ExtensionApi } from '../../src/extension/extension.ts';
import type { HostKit } from './consent.ts';

type Invoke = (code: string, extra?: Record<string, unknown>) => Promise<string>;

type UiStep =
  | { waitFor: string; text?: string; webview?: boolean; timeoutMs?: number }
  | { click: string; text?: string }
  | { hover: string; text?: string }
  | { press: string }
  | { waitMs: number };

/** Python that fetches `url` through the sandbox's proxy and prints the status and the body. */
const fetchCode = (url: string, label: string) => `# ${label}
import urllib.request, urllib.error
try:
    with urllib.request.urlopen(${JSON.stringify(url)}, timeout=30) as r:
        print("status", r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print("status", e.code, e.read().decode().strip())`;

export async function networkChecks(
  kit: HostKit,
  ext: ExtensionApi,
  invoke: Invoke,
  ui: (steps: UiStep[]) => Promise<void>,
): Promise<void> {
  const { check, waitFor } = kit;
  const assert: HostKit['assert'] = kit.assert;
  const settings = vscode.workspace.getConfiguration('codeExecutionMode');
  const user = <T>(key: string) => vscode.workspace.getConfiguration('codeExecutionMode').inspect<T>(key)?.globalValue;
  const allowed = () => user<string[]>('sandbox.network.allow') ?? [];
  const before = { ask: user<boolean>('sandbox.network.ask'), allow: user<string[]>('sandbox.network.allow') };
  // A session started after the network is on: its container has the proxy's socket.
  const session = 'network-check';
  const question = '.notifications-center .notification-list-item';
  const showNotifications = () => vscode.commands.executeCommand('notifications.showList');
  const toolDescription = () => vscode.lm.tools.find((t) => t.name.endsWith('run_python'))?.description ?? '';
  let origin: Server | undefined;
  try {
    origin = createServer((_req, res) => res.end('hello from the host'));
    await new Promise<void>((resolve) => origin!.listen(0, '127.0.0.1', resolve));
    const port = (origin.address() as AddressInfo).port;
    const where = `localhost:${port}`;
    const asked = { waitFor: question, text: `allow the sandbox to reach ${where}` } as const;

    /** Starts the fetch and waits until its question is open, the status bar and the extension's notification saying so. */
    const startAsked = async (label: string) => {
      const code = fetchCode(`http://${where}/`, label);
      const pending = invoke(code, { session });
      const waiting = await waitFor(
        'the run to wait for a network answer',
        () => ext.runs.runs().find((r) => r.code === code && waitingForNetworkQuestion(r)),
        60_000,
      ).catch(async () => {
        const run = ext.runs.runs().find((r) => r.code === code);
        const { status, stdout, stderr, egress, networkQuestions } = run ?? {};
        const result = await Promise.race([pending, new Promise((resolve) => setTimeout(resolve, 1000, '(still waiting)'))]);
        assert(
          false,
          `no question open: ${JSON.stringify({ status, stdout, stderr, egress, networkQuestions })}; result: ${String(result)}`,
        );
      });
      // The Runs view's row says what it waits for, as it does for a tool confirmation.
      const row = ext.runs.getTreeItem({ kind: 'run', run: waiting });
      assert(
        String(row.description).startsWith(`waiting for you: network access to ${where} · `),
        `description: ${String(row.description)}`,
      );
      assert((row.iconPath as vscode.ThemeIcon).id === 'bell-dot', `icon: ${(row.iconPath as vscode.ThemeIcon).id}`);
      const status = await waitFor('the status bar item', () => ext.confirmations.text, 10_000);
      assert(status === '$(bell-dot) Answer a network question', `status bar: ${status}`);
      assert(
        ext.confirmations.pendingNetwork.length === 1 && ext.confirmations.pendingNetwork[0]!.port === port,
        `open: ${JSON.stringify(ext.confirmations.pendingNetwork)}`,
      );
      await showNotifications();
      await ui([{ waitFor: question, text: `asks to reach ${where} and waits for your answer` }, asked]);
      return { code, pending };
    };

    await check(
      "network: a question shown in VS Code's own UI names localhost:PORT; declined there, Python gets a 403 saying so",
      async () => {
        await settings.update('sandbox.network.ask', true, vscode.ConfigurationTarget.Global);
        await waitFor('ask in the bridge config', () => (ext.config().sandbox.network?.ask === true ? true : undefined), 10_000);
        // The running bridge reads it from its configuration file: run_python's listing says so once it has.
        await waitFor(
          'the bridge to apply sandbox.network.ask',
          () => (toolDescription().includes('network: asks per host') ? true : undefined),
          30_000,
        ).catch(() => assert(false, `run_python's listing: ${toolDescription()}`));
        const { code, pending } = await startAsked('declined');
        await ui([
          // Secondary actions sit behind the notification's "More Actions..." button, shown on hover.
          { hover: question, text: `allow the sandbox to reach ${where}` },
          { click: `${question}:has-text("allow the sandbox to reach ${where}") .codicon-notifications-configure` },
          { click: '.context-view .action-label', text: 'Cancel' },
        ]);
        const text = await pending;
        await vscode.commands.executeCommand('notifications.hideList');
        assert(text.includes('status 403') && text.includes('the user did not allow it'), `result: ${text}`);
        const run = await waitFor('the answer in the run log', () => ext.runs.runs().find((r) => r.code === code && r.status === 'ok'));
        assert(run.networkQuestions.map((q) => q.answer).join() === 'declined', `questions: ${JSON.stringify(run.networkQuestions)}`);
        await waitFor('the status bar item to go', () => (ext.confirmations.text === undefined ? true : undefined), 10_000);
      },
    );

    await check(
      'network: "always" picked in the form adds localhost:PORT to the user\'s allow list, with Undo; loopback stays refused',
      async () => {
        const { code, pending } = await startAsked('always');
        await ui([
          { click: '.notifications-center .monaco-button', text: 'Respond' },
          { waitFor: '.quick-input-widget .quick-input-title', text: `Allow ${where} for` },
          { waitMs: 300 },
          { press: 'ArrowDown' },
          { press: 'ArrowDown' },
          { press: 'Enter' },
        ]);
        const text = await pending;
        // Allowed by the user, still a loopback address: the proxy refuses it, and Python is told why.
        assert(text.includes('status 403') && text.includes('loopback address'), `result: ${text}`);
        const run = await waitFor('the answer in the run log', () => ext.runs.runs().find((r) => r.code === code && r.status === 'ok'));
        assert(run.networkQuestions.map((q) => q.answer).join() === 'always', `questions: ${JSON.stringify(run.networkQuestions)}`);
        await waitFor('localhost:PORT in the user setting', () => (allowed().includes(where) ? true : undefined), 15_000).catch(() =>
          assert(false, `user allow list: ${JSON.stringify(allowed())}`),
        );
        await showNotifications();
        await ui([
          { waitFor: question, text: `the sandbox may now always reach ${where}` },
          { click: `${question}:has-text("may now always reach ${where}") .monaco-button`, text: 'Undo' },
        ]);
        await vscode.commands.executeCommand('notifications.hideList');
        await waitFor('Undo to take it out again', () => (allowed().includes(where) ? undefined : true), 15_000).catch(() =>
          assert(false, `user allow list after Undo: ${JSON.stringify(allowed())}`),
        );
      },
    );

    await check("network: the run panel's Network section lists each request with its decision and the question's answer", async () => {
      const runs = ext.runs.runs().filter((r) => r.session === session && r.egress.some((e) => e.port === port));
      const declined = runs.find((r) => r.code.startsWith('# declined'));
      const always = runs.find((r) => r.code.startsWith('# always'));
      assert(declined && always, `runs: ${runs.map((r) => r.code.split('\n')[0]).join(', ')}`);
      for (const [run, decision, answer] of [
        [declined, 'denied', 'declined'],
        [always, 'private', 'always'],
      ] as const) {
        await vscode.commands.executeCommand('codeExecutionMode.openRun', run.id);
        const panel = await waitFor('the panel for that run', () => (ext.panel()?.run.id === run.id ? ext.panel() : undefined), 10_000);
        const page = panel.page;
        assert(
          new RegExp(`<code>${where}</code>(?: <span class="note">[^<]*</span>)?</td><td><code>GET</code></td><td>${decision}<`).test(page),
          `no GET ${where} ${decision} row in the Network section`,
        );
        assert(new RegExp(`<code>${where}</code></td><td>${answer}</td>`).test(page), `no question row answered ${answer}`);
      }
    });
  } finally {
    origin?.close();
    await settings.update('sandbox.network.ask', before.ask, vscode.ConfigurationTarget.Global);
    await settings.update('sandbox.network.allow', before.allow, vscode.ConfigurationTarget.Global);
  }
}

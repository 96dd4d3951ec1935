// Runs inside a real VS Code extension host (see test/host/run.mjs): the packaged extension,
// VS Code's own MCP client starting the bridge, run_python through vscode.lm.invokeTool, real
// containers and a real npm MCP server configured through the settings.
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { waitingForConfirmation } from '../../src/state/run-log/reader.ts';
import { snippetHash } from '../../src/state/snippets.ts';
import { formatDuration } from '../../src/shared/durations.ts';
import type { ExtensionApi } from '../../src/extension/extension.ts';
import { consentChecks } from './consent.ts';
import { oauthChecks } from './oauth.ts';
import { packagesChecks } from './packages.ts';
import { passthroughChecks } from './passthrough.ts';
import { wasmChecks } from './wasm.ts';
import { keepSessionsChecks } from './keep-sessions.ts';
import { meterChecks } from './meter.ts';
import { networkChecks } from './network.ts';
import { screensChecks } from './screens.ts';
import { fixtureProgram } from '../helpers/fixtures.ts';

interface Outcome {
  name: string;
  ok: boolean;
  error?: string;
  ms: number;
}

const EXTENSION_ID = 'code-execution-mode.code-execution-mode';
const results: Outcome[] = [];
const figures: Record<string, number> = {};
const resultsFile = process.env.CEM_HOST_RESULTS ?? '';
const repo = process.env.CEM_REPO ?? '';
const image = process.env.CEM_TEST_IMAGE ?? 'localhost/cem-sandbox:bookworm';

function save(done: boolean): void {
  if (resultsFile) writeFileSync(resultsFile, JSON.stringify({ done, tests: results, figures }));
}

async function check(name: string, fn: () => Promise<void>): Promise<void> {
  const started = Date.now();
  try {
    await fn();
    results.push({ name, ok: true, ms: Date.now() - started });
  } catch (error) {
    results.push({
      name,
      ok: false,
      error: error instanceof Error ? `${error.message}\n${error.stack ?? ''}` : String(error),
      ms: Date.now() - started,
    });
  }
  save(false);
}

function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    await sleep(250);
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

/** Asks the outer runner for a screenshot of the workbench and waits until it is taken. */
async function screenshot(name: string): Promise<void> {
  if (!resultsFile) return;
  const dir = join(resultsFile, '..');
  writeFileSync(join(dir, 'screenshot-request.json'), JSON.stringify({ name }));
  await waitFor(`screenshot ${name}`, () => existsSync(join(dir, `screenshot-done-${name}`)) || undefined, 30_000).catch(() => undefined);
}

/** A step of what the outer runner does in the page, as a user would (see test/host/run.mjs). */
type UiStep =
  | { waitFor: string; text?: string; webview?: boolean; timeoutMs?: number }
  | { click: string; text?: string; webview?: boolean; timeoutMs?: number }
  | { hover: string; text?: string; timeoutMs?: number }
  | { type: string }
  | { press: string }
  | { fill: string; text: string }
  | { screenshot: string; clip?: string[]; margin?: number }
  | { viewport: { width: number; height: number } }
  | { fits: string; webview: true }
  | { shows: string; text: string }
  | { waitMs: number };

let uiRequests = 0;
/** Has the outer runner act on the workbench (VS Code's own UI) and waits until it has. */
async function ui(steps: UiStep[]): Promise<void> {
  assert(resultsFile, 'no runner to act on the page');
  const dir = join(resultsFile, '..');
  const id = `ui-${++uiRequests}`;
  writeFileSync(join(dir, 'ui-request.json'), JSON.stringify({ id, steps }));
  const done = join(dir, `ui-done-${id}`);
  // The runner writes the file whole (a rename); one caught half-written by an older runner is read again.
  const outcome = await waitFor(
    `the page actions ${id}`,
    () => {
      if (!existsSync(done)) return undefined;
      try {
        return JSON.parse(readFileSync(done, 'utf8')) as { ok: boolean; error?: string };
      } catch {
        return undefined;
      }
    },
    120_000,
  );
  assert(outcome.ok, `in the page: ${outcome.error ?? 'failed'}`);
}

/** A pause for the page to settle, then a screenshot (saved only when the runner has --screenshots). */
const shot = (name: string, settleMs = 800): UiStep[] => [{ waitMs: settleMs }, { screenshot: name }];

function toolName(): string | undefined {
  return vscode.lm.tools.find((t) => t.name.endsWith('run_python'))?.name;
}

/**
 * run_python through VS Code, cancelled after `timeoutMs` (its own timeout is 30 s): a call VS
 * Code sends while it restarts the server for a settings change can go unanswered, and the
 * suite then fails that check, or tries again, instead of waiting for the whole suite's limit.
 */
async function invoke(code: string, extra: Record<string, unknown> = {}, timeoutMs = 180_000): Promise<string> {
  const name = toolName();
  assert(name, 'run_python is not among vscode.lm.tools');
  const cancel = new vscode.CancellationTokenSource();
  const timer = setTimeout(() => cancel.cancel(), timeoutMs);
  try {
    const result = await vscode.lm.invokeTool(name, { input: { code, ...extra }, toolInvocationToken: undefined }, cancel.token);
    return result.content.map((part) => (part instanceof vscode.LanguageModelTextPart ? part.value : '')).join('');
  } catch (error) {
    if (cancel.token.isCancellationRequested) throw new Error(`run_python did not answer within ${timeoutMs / 1000} s`, { cause: error });
    throw error;
  } finally {
    clearTimeout(timer);
    cancel.dispose();
  }
}

async function startBridge(): Promise<void> {
  await waitFor(
    'the bridge to start in VS Code',
    async () => {
      await vscode.commands.executeCommand('workbench.mcp.startServer', '*', { waitForLiveTools: true, autoTrustChanges: true });
      return toolName();
    },
    120_000,
  );
}

export async function run(): Promise<void> {
  save(false);
  const settings = vscode.workspace.getConfiguration('codeExecutionMode');
  const memoryServer = join(repo, 'node_modules/@modelcontextprotocol/server-memory/dist/index.js');
  const fixtureServer = fixtureProgram('fixture', repo);
  let api: ExtensionApi | undefined;
  const activationStarted = Date.now();

  await check('the extension activates and returns its API', async () => {
    const extension = vscode.extensions.getExtension<ExtensionApi>(EXTENSION_ID);
    assert(extension, `extension ${EXTENSION_ID} is not installed`);
    api = await extension.activate();
    assert(api.stateDir, 'no state dir');
    figures.activationMs = api.activationMs;
  });
  if (!api) return save(true);
  const ext = api;

  await check('settings configure the sandbox and a real npm MCP server', async () => {
    await settings.update('sandbox.image', image, vscode.ConfigurationTarget.Global);
    // Containers only, so that a runtime's failure is seen (wasm.ts checks the WebAssembly sandbox).
    await settings.update('sandbox.backend', 'container', vscode.ConfigurationTarget.Global);
    await settings.update('sandbox.runtime', process.env.CEM_HOST_RUNTIME ?? 'podman', vscode.ConfigurationTarget.Global);
    await settings.update(
      'servers',
      {
        memory: {
          command: process.execPath,
          args: [memoryServer],
          env: { MEMORY_FILE_PATH: join(ext.stateDir, 'memory.jsonl') },
          description: 'Knowledge graph memory',
        },
      },
      vscode.ConfigurationTarget.Global,
    );
    await waitFor(
      'the settings to reach the bridge config',
      () => (Object.keys(ext.config().servers).includes('memory') ? true : undefined),
      10_000,
    );
  });

  const listed = Date.now();
  await check("VS Code's MCP client starts the bridge and lists run_python", async () => {
    await startBridge();
    figures.activationToToolsMs = Date.now() - activationStarted;
    figures.startToToolsMs = Date.now() - listed;
  });

  // CEM_HOST_ONLY=passthrough,packages: only those groups after the start (a quicker loop while working on them).
  const only = (process.env.CEM_HOST_ONLY ?? '').split(',').filter(Boolean);
  if (only.length > 0) {
    if (only.includes('oauth')) await oauthChecks({ check, assert, waitFor, invoke, startBridge, sleep }, ext, repo, ui);
    if (only.includes('passthrough')) await passthroughChecks({ check, assert, waitFor, invoke, startBridge, sleep }, ext, repo, ui);
    if (only.includes('packages')) await packagesChecks({ check, assert, waitFor, invoke, startBridge, sleep }, ext, invoke, image);
    if (only.includes('wasm')) await wasmChecks({ check, assert, waitFor, invoke, startBridge, sleep }, ext);
    if (only.includes('sessions')) await keepSessionsChecks({ check, assert, waitFor, invoke, startBridge, sleep }, ext, fixtureServer);
    if (only.includes('meter')) await meterChecks({ check, assert, waitFor, invoke, startBridge, sleep }, ext, fixtureServer, ui);
    if (only.includes('network')) await networkChecks({ check, assert, waitFor, invoke, startBridge, sleep }, ext, invoke, ui);
    if (only.includes('screens'))
      await screensChecks({ check, assert, waitFor, invoke, startBridge, sleep }, ext, ui, { memoryServer, fixtureServer });
    await ext.runtime.settled();
    return save(true);
  }

  let runText = '';
  await check('vscode.lm.invokeTool runs Python in a real container calling the proxied server', async () => {
    runText = await invoke(
      [
        'await mcp_memory.create_entities(entities=[{"name": "Ada", "entityType": "person", "observations": ["first programmer"]}])',
        'graph = await mcp_memory.read_graph()',
        'import os',
        '(os.getuid(), [e["name"] for e in graph["entities"]])',
      ].join('\n'),
    );
    // The extension's bridge sends text only: VS Code hands the model that text.
    assert(runText.includes("(65534, ['Ada'])"), `unexpected result: ${runText}`);
  });

  await check('the Runs view shows that run with its tool calls', async () => {
    const run = await waitFor('the run in the Runs view', () =>
      ext.runs.runs().find((r) => r.code.includes('create_entities') && r.status === 'ok'),
    );
    assert(run.toolCalls.length === 2, `expected 2 tool calls, got ${run.toolCalls.length}`);
    const item = ext.runs.getTreeItem({ kind: 'run', run });
    // The row leads with the code's first line; state, duration and session are beside it.
    assert(String(item.label).startsWith('await mcp_memory.create_entities'), `label: ${String(item.label)}`);
    assert(/^ok · [\d.]+ (ms|s) · default$/.test(String(item.description)), `description: ${String(item.description)}`);
    assert((item.iconPath as vscode.ThemeIcon).id === 'pass', `icon: ${(item.iconPath as vscode.ThemeIcon).id}`);
    assert((item.tooltip as vscode.MarkdownString).value.includes('2 tool calls'), 'the tooltip does not count the tool calls');
    await vscode.commands.executeCommand('workbench.view.extension.codeExecutionMode');
  });

  await check("the Tools view shows the server's tools", async () => {
    const server = await waitFor('memory in the Tools view', () =>
      ext.tools.servers().find((s) => s.name === 'memory' && s.state === 'running' && (s.tools?.length ?? 0) > 0),
    );
    assert(
      server.tools?.some((t) => t.name === 'create_entities'),
      'create_entities missing',
    );
  });

  await check('the run panel opens for the run', async () => {
    const run = ext.runs.runs().find((r) => r.code.includes('create_entities'));
    assert(run, 'no run');
    await vscode.commands.executeCommand('codeExecutionMode.openRun', run.id);
    const panel = await waitFor('the panel', () => ext.panel());
    assert(panel.run.id === run.id, 'the panel shows another run');
    // Titled by the code's first line (short) and the time it started.
    assert(/^await mcp_memory\.create_\S* · \d\d:\d\d:\d\d$/.test(panel.title), `panel title ${panel.title}`);
    await sleep(4000);
    await screenshot('run-panel');
  });

  await check('a file written to /work/out comes back with the result and is listed in the run panel', async () => {
    const out = await invoke('open("/work/out/report.txt", "w").write("host check\\n")');
    assert(out.includes('host check'), `the file is not in the result: ${out}`);
    const run = await waitFor('the run with its file', () =>
      ext.runs.runs().find((r) => r.code.includes('report.txt') && r.files?.length === 1),
    );
    const saved = join(ext.stateDir, run.files![0]!.file!);
    assert((statSync(saved).mode & 0o777) === 0o600, `saved file mode ${(statSync(saved).mode & 0o777).toString(8)}`);
    await vscode.commands.executeCommand('codeExecutionMode.openRun', run.id);
    const panel = await waitFor('the panel for that run', () => (ext.panel()?.run.id === run.id ? ext.panel() : undefined), 10_000);
    assert(panel.run.files?.[0]?.path === 'report.txt', `files: ${JSON.stringify(panel.run.files)}`);
  });

  await check('the state dir is private: folder 0700; run log, catalog and bridge config 0600', async () => {
    const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);
    assert(mode(ext.stateDir) === '700', `state dir ${mode(ext.stateDir)}`);
    await waitFor('catalog.json', () => existsSync(join(ext.stateDir, 'catalog.json')) || undefined, 10_000);
    for (const file of [join(ext.stateDir, 'runs.jsonl'), join(ext.stateDir, 'catalog.json'), ext.configFile]) {
      assert(mode(file) === '600', `${file}: ${mode(file)}`);
    }
  });

  await check('Save Run as Snippet writes a 0600 file, the Tools view lists it, and the model finds and runs it', async () => {
    const code =
      '# names in the memory graph\nkind = "person"\ngraph = await mcp_memory.read_graph()\nsorted(e["name"] for e in graph["entities"] if e["entityType"] == kind)';
    await invoke(code);
    const run = await waitFor('the run to save', () => ext.runs.runs().find((r) => r.code === code && r.status === 'ok'));
    // From the run panel's button (the same command, with the run's id); the answers given as a preset.
    await vscode.commands.executeCommand('codeExecutionMode.openRun', run.id);
    const path = await vscode.commands.executeCommand<string | undefined>('codeExecutionMode.saveRunAsSnippet', run.id, {
      name: 'graph_names',
      description: 'Lists the names of the memory graph entities of one kind.',
      params: 'kind',
    });
    assert(path === join(ext.stateDir, 'snippets', 'graph_names.py'), `saved to ${path}`);
    assert((statSync(path).mode & 0o777) === 0o600, `mode ${(statSync(path).mode & 0o777).toString(8)}`);
    assert(vscode.window.activeTextEditor?.document.uri.fsPath === path, 'the snippet is not opened for review');
    const listed = await waitFor('the snippet in the Tools view', () => ext.tools.snippetList().find((s) => s.name === 'graph_names'));
    assert(listed.params === 'kind="person"', `params ${listed.params}`);
    const section = ext.tools.getChildren().find((n) => n.kind === 'snippets');
    assert(section, 'no Snippets section in the Tools view');
    const text = await invoke(
      'hits = await search_tool_docs("names of memory graph entities")\n(hits[0]["kind"], hits[0]["tool"], await run_snippet("graph_names"), await run_snippet("graph_names", kind="nobody"))',
    );
    assert(text.includes("('snippet', 'graph_names', ['Ada'], [])"), `unexpected result: ${text}`);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });

  await check(
    'Save as Snippet clicked in the run panel, then the model runs it: the file and both runs say where it came from',
    async () => {
      const code = '# double the answer\nanswer = 21\nanswer * 2';
      await invoke(code);
      const run = await waitFor('the run to save', () => ext.runs.runs().find((r) => r.code === code && r.status === 'ok'));
      await vscode.commands.executeCommand('codeExecutionMode.openRun', run.id);
      await waitFor('the panel for that run', () => (ext.panel()?.run.id === run.id ? true : undefined), 10_000);
      const title = (step: string) => ({ waitFor: '.quick-input-widget .quick-input-title', text: `Save Run as Snippet (${step})` });
      const input = (text: string) => ({ fill: '.quick-input-widget .quick-input-box input', text });
      await ui([
        { click: '#save-snippet', webview: true },
        title('1/3'),
        input('double_answer'),
        { press: 'Enter' },
        title('2/3'),
        input('Doubles the answer it is given.'),
        { press: 'Enter' },
        title('3/3'),
        input('answer'),
        { press: 'Enter' },
      ]);
      const path = join(ext.stateDir, 'snippets', 'double_answer.py');
      const source = await waitFor('the snippet file', () => (existsSync(path) ? readFileSync(path, 'utf8') : undefined), 20_000);
      assert(source.includes(`# Saved from sandbox run ${run.id} `), source);
      assert(source.includes('async def main(answer=21):'), source);
      const saved = await waitFor('the save in the run log', () =>
        ext.runs.find(run.id)?.savedAsSnippets.find((s) => s.name === 'double_answer'),
      );
      assert(saved.sha256 === snippetHash(source), `hash ${saved.sha256}`);
      await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
      const text = await invoke('await run_snippet("double_answer", answer=50)');
      assert(text.includes('100'), `result: ${text}`);
      const used = await waitFor('the snippet run', () =>
        ext.runs.runs().find((r) => r.code.includes('run_snippet("double_answer"') && r.status === 'ok'),
      );
      assert(
        used.snippets[0]?.name === 'double_answer' && used.snippets[0].origin === 'user',
        `snippets: ${JSON.stringify(used.snippets)}`,
      );
      assert(
        used.snippets[0].sha256 === snippetHash(source) && used.snippets[0].arguments === 'answer=50',
        `snippets: ${JSON.stringify(used.snippets)}`,
      );
      await vscode.commands.executeCommand('codeExecutionMode.openRun', used.id);
      await waitFor('the panel for the snippet run', () => (ext.panel()?.run.id === used.id ? true : undefined), 10_000);
      await ui(shot('run-panel-snippet', 2500));
    },
  );

  await check("Run Selection goes through VS Code's MCP client to the same bridge and session as the agent", async () => {
    await invoke('shared_marker = 41');
    const code = 'shared_marker + 1';
    const document = await vscode.workspace.openTextDocument({ language: 'python', content: `${code}\nprint("not selected")\n` });
    const editor = await vscode.window.showTextDocument(document);
    editor.selection = new vscode.Selection(0, 0, 0, code.length);
    await vscode.commands.executeCommand('codeExecutionMode.runSelection');
    const run = await waitFor('the selection in the Runs view', () => ext.runs.runs().find((r) => r.code === code && r.status));
    assert(
      run.status === 'ok' && run.value === '42',
      `the agent's variable was not there: ${run.status} ${run.value} ${run.error?.message ?? ''}`,
    );
    assert(run.session === 'default', `session ${run.session}`);
    await waitFor('the panel for the selection', () => (ext.panel()?.run.id === run.id ? true : undefined), 10_000);
    await vscode.window.showTextDocument(document);
    await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
  });

  await check('a settings change restarts the bridge with the new server list', async () => {
    await settings.update(
      'servers',
      {
        memory: {
          command: process.execPath,
          args: [memoryServer],
          env: { MEMORY_FILE_PATH: join(ext.stateDir, 'memory.jsonl') },
          description: 'Knowledge graph memory',
        },
        // echo asks first: the confirmation checks below answer in VS Code's own UI.
        fixture: { command: process.execPath, args: [fixtureServer], description: 'Test fixture', confirmTools: ['echo'] },
      },
      vscode.ConfigurationTarget.Global,
    );
    const text = await waitFor(
      'the restarted bridge to know the new server',
      async () => {
        await startBridge();
        const out = await invoke('sorted(s["name"] for s in discovered_servers())');
        return out.includes("['fixture', 'memory']") ? out : undefined;
      },
      90_000,
    );
    assert(text.includes('fixture'), text);
    const sum = await invoke('await mcp_fixture.add(a=20, b=22)');
    assert(sum.includes("{'sum': 42}"), sum);
    await vscode.commands.executeCommand('codeExecutionMode.refreshTools');
    await waitFor('fixture tools in the Tools view', () =>
      ext.tools.servers().find((s) => s.name === 'fixture' && (s.tools?.length ?? 0) > 0),
    );
    await sleep(1000);
    await screenshot('views');
  });

  // The confirmation comes while vscode.lm.invokeTool waits: VS Code shows it as a notification
  // (no chat session) with Respond and, among its secondary actions, Cancel (a decline). In this
  // headless window it goes to the notification center without a toast: open the center.
  const question = '.notifications-center .notification-list-item';
  const confirmationShown = { waitFor: question, text: 'wants to call the tool fixture.echo' } as const;
  const showNotifications = () => vscode.commands.executeCommand('notifications.showList');
  // The form's one field is a pick: "this call only" (first, pre-selected), then "this tool for
  // the rest of this session". Its title names the tool.
  const pickShown = { waitFor: '.quick-input-widget .quick-input-title', text: 'Allow fixture.echo for' } as const;
  await check("a confirmation answered in VS Code's own UI: Respond, then the session option; that session asks no more", async () => {
    const code = 'await mcp_fixture.echo(message="confirmed in the UI")';
    const pending = invoke(code, { session: 'trusting' });
    const waiting = await waitFor(
      'the run to wait for confirmation',
      () => ext.runs.runs().find((r) => r.code === code && waitingForConfirmation(r)),
      30_000,
    );
    const row = ext.runs.getTreeItem({ kind: 'run', run: waiting });
    assert(String(row.description).startsWith('waiting for confirmation · '), `description: ${String(row.description)}`);
    assert((row.iconPath as vscode.ThemeIcon).id === 'bell-dot', `icon: ${(row.iconPath as vscode.ThemeIcon).id}`);
    await showNotifications();
    await ui([
      confirmationShown,
      ...shot('confirmation'),
      { click: '.notifications-center .monaco-button', text: 'Respond' },
      pickShown,
      ...shot('confirmation-choice', 300),
      { press: 'ArrowDown' },
      { press: 'Enter' },
    ]);
    const text = await pending;
    await vscode.commands.executeCommand('notifications.hideList');
    assert(text.includes('confirmed in the UI'), `result: ${text}`);
    const run = await waitFor('the answer in the run log', () => ext.runs.runs().find((r) => r.code === code && r.status === 'ok'));
    assert(run.confirmations[0]?.answer === 'allowed-for-session', `confirmations: ${JSON.stringify(run.confirmations)}`);
    assert(
      run.toolCalls.some((c) => c.tool === 'echo' && c.outcome === 'ok'),
      `calls: ${JSON.stringify(run.toolCalls)}`,
    );
    // Allowed for that session: the next call there runs without a question.
    const next = 'await mcp_fixture.echo(message="no question now")';
    const again = await invoke(next, { session: 'trusting' });
    assert(again.includes('no question now'), `result: ${again}`);
    const quiet = await waitFor('the second run in the log', () => ext.runs.runs().find((r) => r.code === next && r.status === 'ok'));
    assert(quiet.confirmations.length === 0, `confirmations: ${JSON.stringify(quiet.confirmations)}`);
  });

  await check("a confirmation declined in VS Code's own UI: Cancel, then ToolError(kind='declined') and no call", async () => {
    const code = 'try:\n    await mcp_fixture.echo(message="declined in the UI")\nexcept ToolError as e:\n    print("refused:", e.kind)';
    const pending = invoke(code);
    await waitFor(
      'the run to wait for confirmation',
      () => ext.runs.runs().find((r) => r.code === code && waitingForConfirmation(r)),
      30_000,
    );
    await showNotifications();
    await ui([
      confirmationShown,
      // Secondary actions sit behind the notification's "More Actions..." button, shown on hover.
      { hover: question, text: 'wants to call the tool fixture.echo' },
      { click: `${question}:has-text("wants to call the tool fixture.echo") .codicon-notifications-configure` },
      { click: '.context-view .action-label', text: 'Cancel' },
    ]);
    const text = await pending;
    await vscode.commands.executeCommand('notifications.hideList');
    assert(text.includes('refused: declined'), `result: ${text}`);
    const run = await waitFor('the answer in the run log', () => ext.runs.runs().find((r) => r.code === code && r.status === 'ok'));
    assert(run.confirmations[0]?.answer === 'declined', `confirmations: ${JSON.stringify(run.confirmations)}`);
    assert(
      run.toolCalls.every((c) => c.outcome !== 'ok'),
      `calls: ${JSON.stringify(run.toolCalls)}`,
    );
  });

  await check("the run panel shows a confirmed call's own time, the user's wait apart", async () => {
    const run = await waitFor('the confirmed run', () =>
      ext.runs.runs().find((r) => r.code.includes('confirmed in the UI') && r.confirmations[0]?.answer?.startsWith('allowed')),
    );
    const waited = run.confirmations[0]!.waitedMs ?? 0;
    const call = run.toolCalls.find((c) => c.tool === 'echo');
    assert(call && waited > 0 && call.durationMs >= waited, `call ${JSON.stringify(call)}, waited ${waited} ms`);
    await vscode.commands.executeCommand('codeExecutionMode.openRun', run.id);
    const panel = await waitFor('the panel for that run', () => (ext.panel()?.run.id === run.id ? ext.panel() : undefined), 10_000);
    const cell = /<td>([^<]*) \(\+([^<]*) waiting for you\)<\/td>/.exec(panel.page);
    assert(cell, 'the tool call row does not show the wait apart');
    assert(cell[1] === formatDuration(call.durationMs - waited) && cell[2] === formatDuration(waited), `shown: ${cell[0]}`);
  });

  await check(
    'a plain Enter after Respond allows this call only: the next call of the tool in the session asks again; the status bar says a call waits',
    async () => {
      const answerWithEnter = async (code: string) => {
        // A short list: the notifications of earlier checks go, so the new ones are in view.
        await vscode.commands.executeCommand('notifications.clearAll');
        const pending = invoke(code);
        await waitFor(
          'the run to wait for confirmation',
          () => ext.runs.runs().find((r) => r.code === code && waitingForConfirmation(r)),
          30_000,
        );
        const status = await waitFor('the status bar item', () => ext.confirmations.text, 10_000);
        assert(status === '$(bell-dot) Confirm a tool call', `status bar: ${status}`);
        await showNotifications();
        await ui([
          // The extension's own notification, beside VS Code's question.
          { waitFor: question, text: 'fixture.echo (session "default") waits for your answer' },
          confirmationShown,
          { click: '.notifications-center .monaco-button', text: 'Respond' },
          pickShown,
          { waitMs: 300 },
          { press: 'Enter' },
        ]);
        const text = await pending;
        await vscode.commands.executeCommand('notifications.hideList');
        const run = await waitFor('the answer in the run log', () => ext.runs.runs().find((r) => r.code === code && r.status === 'ok'));
        return { text, run };
      };
      const first = await answerWithEnter('await mcp_fixture.echo(message="enter once")');
      assert(first.text.includes('enter once'), `result: ${first.text}`);
      assert(first.run.confirmations[0]?.answer === 'allowed-once', `confirmations: ${JSON.stringify(first.run.confirmations)}`);
      await waitFor('the status bar item to go', () => (ext.confirmations.text === undefined ? true : undefined), 10_000);
      const second = await answerWithEnter('await mcp_fixture.echo(message="asked again")');
      assert(second.text.includes('asked again'), `result: ${second.text}`);
      assert(second.run.confirmations[0]?.answer === 'allowed-once', `confirmations: ${JSON.stringify(second.run.confirmations)}`);
    },
  );

  await check('what VS Code hands the model: a flood within the budget, a returned image once, no base64 as text', async () => {
    // Images come back as data parts (mimeType + bytes); everything else as text parts.
    const parts = async (code: string) => {
      const name = toolName();
      assert(name, 'run_python is not among vscode.lm.tools');
      const result = await vscode.lm.invokeTool(
        name,
        { input: { code }, toolInvocationToken: undefined },
        new vscode.CancellationTokenSource().token,
      );
      const text = result.content.map((part) => (part instanceof vscode.LanguageModelTextPart ? part.value : '')).join('');
      const data = result.content.filter(
        (part): part is { mimeType: string; data: Uint8Array } =>
          typeof part === 'object' && part !== null && 'mimeType' in part && 'data' in part,
      );
      return { text, data, kinds: result.content.map((part) => (part as object)?.constructor?.name ?? typeof part) };
    };
    const flood = await parts('for i in range(100000): print(i)');
    figures.floodModelChars = flood.text.length;
    assert(flood.text.length < 21_000, `the flood handed the model ${flood.text.length} characters`);
    assert(flood.text.includes('print less, or summarise in code'), 'the cut is not said');
    assert(flood.data.length === 0, `flood parts: ${flood.kinds.join(', ')}`);
    const image = await parts('import base64\nr = await mcp_fixture.image()\nemit_image(base64.b64decode(r[0]["data"]))\nr');
    figures.imageModelChars = image.text.length;
    figures.imageDataParts = image.data.length;
    figures.imageBytes = image.data.reduce((n, part) => n + part.data.byteLength, 0);
    assert(image.data.length === 1, `image parts: ${image.kinds.join(', ')}`);
    assert(image.data[0]!.mimeType.startsWith('image/'), `mime ${image.data[0]!.mimeType}`);
    assert(image.text.includes('<image image/png 70 bytes, attached>'), image.text);
    assert(!/[A-Za-z0-9+/]{60,}/.test(image.text), `base64 in the text: ${image.text}`);
  });

  await check('VS Code hands the model the text of a result, not escaped JSON: lines and quotes as printed', async () => {
    const text = await invoke('print("first line\\nsays \\"hi\\"")\n6 * 7');
    assert(text === 'first line\nsays "hi"\nOut: 42', `the model got: ${JSON.stringify(text)}`);
  });

  await check('the run panel folds long output, searches the folded lines, opens it in an editor, zooms an image', async () => {
    const code =
      'import base64\nr = await mcp_fixture.image()\nemit_image(base64.b64decode(r[0]["data"]))\nfor i in range(3000):\n    print("line", i)';
    await invoke(code);
    const run = await waitFor('the long run', () => ext.runs.runs().find((r) => r.code === code && r.status === 'ok'));
    await vscode.commands.executeCommand('codeExecutionMode.openRun', run.id);
    await waitFor('the panel for that run', () => (ext.panel()?.run.id === run.id ? true : undefined), 10_000);
    await ui([
      { waitFor: '.fold', text: 'lines hidden', webview: true },
      { click: '#search', webview: true },
      { type: 'line 2500' },
      { waitFor: '#search-results .hit', text: 'stdout:2501', webview: true },
      { click: 'img.zoomable', webview: true },
      { waitFor: 'img.zoomable.zoomed', webview: true },
      { click: '.fold .open-text', webview: true },
    ]);
    const document = await waitFor(
      'the whole output in an editor',
      () => {
        const open = vscode.window.activeTextEditor?.document;
        return open?.isUntitled && open.getText().includes('line 2999') ? open : undefined;
      },
      15_000,
    );
    assert(document.lineCount >= 3000, `${document.lineCount} lines in the editor`);
    await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
    // The Tools view's Python call uses the sandbox's aliases and the required parameters.
    const fixture = ext.tools.servers().find((s) => s.name === 'fixture');
    const add = fixture && ext.tools.getChildren(fixture).find((n) => n.kind === 'tool' && n.name === 'add');
    assert(
      add?.kind === 'tool' && add.call === 'await mcp_fixture.add(a=..., b=...)',
      `call: ${add?.kind === 'tool' ? add.call : 'no tool'}`,
    );
  });

  await check("the output channel has the bridge's notable events", async () => {
    // The LogOutputChannel writes a file under the window's exthost log folder.
    const root = join(ext.logDir, '..');
    const find = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? find(join(dir, e.name)) : e.name.endsWith('Code Execution Mode.log') ? [join(dir, e.name)] : [],
      );
    const text = await waitFor(
      'run events in the output channel',
      () => {
        const all = find(root)
          .map((f) => readFileSync(f, 'utf8'))
          .join('\n');
        return all.includes('run ok in') && all.includes('server fixture: running') ? all : undefined;
      },
      15_000,
    );
    assert(text.includes('activated in'), 'no activation line');
  });

  await check('the status bar reports a stopped daemon', async () => {
    const saved = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = 'unix:///nonexistent/docker.sock';
    try {
      await settings.update('sandbox.runtime', 'docker', vscode.ConfigurationTarget.Global);
      await waitFor(
        'the status bar to show docker down',
        async () => {
          await ext.runtime.refresh();
          return ext.runtime.text.includes('docker: daemon down') || undefined;
        },
        20_000,
      ).catch(() => assert(false, `status bar: ${ext.runtime.text}`));
    } finally {
      if (saved === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = saved;
      await settings.update('sandbox.runtime', process.env.CEM_HOST_RUNTIME ?? 'podman', vscode.ConfigurationTarget.Global);
    }
    await waitFor(
      'the status bar to recover',
      async () => {
        await ext.runtime.refresh();
        return ext.runtime.text.includes(': ready') || undefined;
      },
      20_000,
    ).catch(() => assert(false, `status bar after restore: ${ext.runtime.text}`));
  });

  await check('${workspaceFolder} and a stored ${input:ID} reach a proxied server that VS Code starts', async () => {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    assert(folder, 'no workspace folder is open');
    await ext.secrets.set('fixture', 'inputs', 'token', 'input-value-42');
    await settings.update(
      'servers',
      {
        memory: {
          command: process.execPath,
          args: [memoryServer],
          env: { MEMORY_FILE_PATH: join(ext.stateDir, 'memory.jsonl') },
          description: 'Knowledge graph memory',
        },
        fixture: {
          command: process.execPath,
          args: [fixtureServer],
          env: { CEM_WS: '${workspaceFolder}', CEM_TOKEN: '${input:token}' },
          description: 'Test fixture',
        },
      },
      vscode.ConfigurationTarget.Global,
    );
    const text = await waitFor(
      'the restarted bridge to substitute the variables',
      async () => {
        await startBridge();
        const out = await invoke('[await mcp_fixture.env(name="CEM_WS"), await mcp_fixture.env(name="CEM_TOKEN")]');
        return out.includes('input-value-42') ? out : undefined;
      },
      90_000,
    );
    assert(text.includes(`['${folder}', 'input-value-42']`), text);
  });

  await check('deleting the state dir while the extension runs: the views follow the new one', async () => {
    // The bridge may write into it meanwhile (ENOTEMPTY): retry as a user deleting it would.
    rmSync(ext.stateDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
    await waitFor(
      'the state dir to be made again',
      () => (existsSync(ext.stateDir) && ext.stateProblem() === undefined ? true : undefined),
      15_000,
    );
    // The view hears of the new run from the watcher (made again on the new folder), not a poll.
    let refreshed = 0;
    const listener = ext.runs.onDidChangeTreeData(() => refreshed++);
    try {
      const out = await invoke('"after-delete"');
      assert(out.includes('after-delete'), out);
      await waitFor('the Runs view to be told of the run', () => (refreshed > 0 ? true : undefined), 15_000);
    } finally {
      listener.dispose();
    }
    await waitFor('the run in the Runs view', () => ext.runs.runs().find((r) => r.code === '"after-delete"' && r.status === 'ok'), 15_000);
  });

  await check('an unwritable state dir: a warning with its path, and run_python says the run is not recorded', async () => {
    // The bridge may write into it meanwhile (ENOTEMPTY): retry as a user deleting it would.
    rmSync(ext.stateDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
    writeFileSync(ext.stateDir, 'a file where the state folder should be');
    try {
      await waitFor('the extension to see the problem', () => ext.stateProblem(), 15_000);
      assert(
        ext.stateWarnings.some((w) => w.includes(ext.stateDir)),
        `warnings: ${ext.stateWarnings.join(' | ')}`,
      );
      const out = await invoke('"while-unwritable"');
      assert(out.includes('the audit log is not being written'), out);
    } finally {
      rmSync(ext.stateDir, { force: true });
    }
    await waitFor(
      'the state dir to be usable again',
      () => (existsSync(ext.stateDir) && ext.stateProblem() === undefined ? true : undefined),
      15_000,
    );
    const out = await invoke('"after-fix"');
    assert(!out.includes('audit log'), out);
    await waitFor('the run in the Runs view', () => ext.runs.runs().find((r) => r.code === '"after-fix"' && r.status === 'ok'), 15_000);
  });

  // The first-contact path: the configured image is not present (as python:3.14-slim is
  // before any pull). The tag below exists nowhere, so nothing is downloaded.
  const missingImage = 'localhost/cem-missing:none';
  await check('a missing image: the status bar says so and offers a pull, once', async () => {
    await settings.update('sandbox.image', missingImage, vscode.ConfigurationTarget.Global);
    // The settings change alone drives the check: no refresh() from here.
    await waitFor(
      'the status bar to say the image is missing',
      () => (ext.runtime.text.includes(': image missing') ? true : undefined),
      30_000,
    ).catch(() => assert(false, `status bar: ${ext.runtime.text}`));
    const runtimeName = process.env.CEM_HOST_RUNTIME ?? 'podman';
    assert(ext.runtime.text === `$(cloud-download) ${runtimeName}: image missing`, `status bar: ${ext.runtime.text}`);
    assert(ext.runtime.offeredPull === missingImage, `last pull offer: ${String(ext.runtime.offeredPull)}`);
    await ext.runtime.refresh();
    assert(ext.runtime.pullOffers.filter((i) => i === missingImage).length === 1, `offers: ${ext.runtime.pullOffers.join(', ')}`);
  });

  await check('a missing image: run_python names the VS Code command, and the failed run has a duration', async () => {
    const text = await waitFor(
      'the restarted bridge to report the missing image',
      async () => {
        await startBridge();
        const out = await invoke('"image-missing-probe"');
        return out.includes(missingImage) ? out : undefined;
      },
      90_000,
    );
    assert(text.includes('Code Execution Mode: Prepare Sandbox Image'), text);
    const run = await waitFor('the failed run in the Runs view', () =>
      ext.runs.runs().find((r) => r.code.includes('image-missing-probe') && r.status === 'error'),
    );
    assert(run.durationMs !== undefined, 'the failed run has no duration');
    const row = ext.runs.getTreeItem({ kind: 'run', run });
    assert(String(row.label) === '"image-missing-probe"', `label: ${String(row.label)}`);
    assert(/^error · [\d.]+ (ms|s) · /.test(String(row.description)), `description: ${String(row.description)}`);
    assert((row.iconPath as vscode.ThemeIcon).id === 'error', `icon: ${(row.iconPath as vscode.ThemeIcon).id}`);
  });

  await check('Diagnose opens a report with the failed image check and a Pull button', async () => {
    await vscode.commands.executeCommand('codeExecutionMode.diagnoseRuntime');
    const panel = await waitFor(
      'the report for the missing image',
      () => {
        const open = ext.diagnosePanel();
        return open?.report?.image === missingImage ? open : undefined;
      },
      30_000,
    );
    const imageCheck = panel.report?.runtimes[0]?.checks.find((c) => c.name === 'image');
    assert(imageCheck?.ok === false, `image check: ${JSON.stringify(imageCheck)}`);
    assert(panel.title === 'Sandbox: not ready', `title: ${panel.title}`);
    assert(panel.html.includes('data-check="image" data-result="failed"'), 'the failed image check is not in the report');
    assert(panel.html.includes('data-check="start" data-result="not reached"'), 'later checks are not shown as not reached');
    assert(panel.html.includes('data-do="pull"'), 'no Pull button');
    assert(panel.html.includes(missingImage), 'the image is not named');
    await sleep(2500);
    await screenshot('diagnose-report');
  });

  await check('Pull (what the notification and the report offer) reports a failed pull and checks again', async () => {
    // The tag exists in no registry: the pull fails within seconds, and the state stays.
    const before = ext.diagnosePanel()?.report;
    const outcome = await ext.runtime.pull();
    assert(outcome === 'failed', `outcome: ${outcome}`);
    assert(ext.runtime.text.includes(': image missing'), `status bar: ${ext.runtime.text}`);
    const after = ext.diagnosePanel()?.report;
    assert(after && after !== before && after.image === missingImage, 'the open report was not checked again');
  });

  await check('restoring the image makes the status bar and the open report ready again', async () => {
    await settings.update('sandbox.image', image, vscode.ConfigurationTarget.Global);
    await waitFor('the status bar to say ready', () => (ext.runtime.text.includes(': ready') ? true : undefined), 30_000).catch(() =>
      assert(false, `status bar: ${ext.runtime.text}`),
    );
    const panel = ext.diagnosePanel();
    assert(panel, 'the report closed');
    await waitFor('the report to say ready', () => (panel.title === 'Sandbox: ready' ? true : undefined), 10_000).catch(() =>
      assert(false, `title: ${panel.title}`),
    );
  });

  await consentChecks({ check, assert, waitFor, invoke, startBridge, sleep }, ext, fixtureServer, image);
  await oauthChecks({ check, assert, waitFor, invoke, startBridge, sleep }, ext, repo, ui);
  await passthroughChecks({ check, assert, waitFor, invoke, startBridge, sleep }, ext, repo, ui);
  await packagesChecks({ check, assert, waitFor, invoke, startBridge, sleep }, ext, invoke, image);
  await wasmChecks({ check, assert, waitFor, invoke, startBridge, sleep }, ext);
  await keepSessionsChecks({ check, assert, waitFor, invoke, startBridge, sleep }, ext, fixtureServer);
  await meterChecks({ check, assert, waitFor, invoke, startBridge, sleep }, ext, fixtureServer, ui);
  await screensChecks({ check, assert, waitFor, invoke, startBridge, sleep }, ext, ui, { memoryServer, fixtureServer });
  // Last: its settings changes and questions come after the screenshots, which want the views as the runs above left them.
  await networkChecks({ check, assert, waitFor, invoke, startBridge, sleep }, ext, invoke, ui);

  // The last settings change started a status bar check: the runner's stop of VS Code would cut
  // its probe container's start short, and leave the container half-made.
  await ext.runtime.settled();
  save(true);
}

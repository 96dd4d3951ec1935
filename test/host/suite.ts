// Runs inside a real VS Code extension host (see test/host/run.mjs): the packaged extension,
// VS Code's own MCP client starting the bridge, run_python through vscode.lm.invokeTool, real
// containers and a real npm MCP server configured through the settings.
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { ExtensionApi } from '../../src/extension/extension.ts';
import { consentChecks } from './consent.ts';

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
    results.push({ name, ok: false, error: error instanceof Error ? `${error.message}\n${error.stack ?? ''}` : String(error), ms: Date.now() - started });
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

function toolName(): string | undefined {
  return vscode.lm.tools.find((t) => t.name.endsWith('run_python'))?.name;
}

async function invoke(code: string, extra: Record<string, unknown> = {}): Promise<string> {
  const name = toolName();
  assert(name, 'run_python is not among vscode.lm.tools');
  const result = await vscode.lm.invokeTool(name, { input: { code, ...extra }, toolInvocationToken: undefined }, new vscode.CancellationTokenSource().token);
  return result.content.map((part) => (part instanceof vscode.LanguageModelTextPart ? part.value : '')).join('');
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
  const fixtureServer = join(repo, 'test/fixtures/fixture-server.ts');
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
    await settings.update('sandbox.runtime', process.env.CEM_HOST_RUNTIME ?? 'podman', vscode.ConfigurationTarget.Global);
    await settings.update(
      'servers',
      { memory: { command: process.execPath, args: [memoryServer], env: { MEMORY_FILE_PATH: join(ext.stateDir, 'memory.jsonl') }, description: 'Knowledge graph memory' } },
      vscode.ConfigurationTarget.Global,
    );
    await waitFor('the settings to reach the bridge config', () => (Object.keys(ext.config().servers).includes('memory') ? true : undefined), 10_000);
  });

  const listed = Date.now();
  await check("VS Code's MCP client starts the bridge and lists run_python", async () => {
    await startBridge();
    figures.activationToToolsMs = Date.now() - activationStarted;
    figures.startToToolsMs = Date.now() - listed;
  });

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
    // VS Code hands the model the structured content when there is one, else the text.
    assert(runText.includes("(65534, ['Ada'])"), `unexpected result: ${runText}`);
  });

  await check('the Runs view shows that run with its tool calls', async () => {
    const run = await waitFor('the run in the Runs view', () => ext.runs.runs().find((r) => r.code.includes('create_entities') && r.status === 'ok'));
    assert(run.toolCalls.length === 2, `expected 2 tool calls, got ${run.toolCalls.length}`);
    const item = ext.runs.getTreeItem({ kind: 'run', run });
    assert(String(item.description).includes('2 tool calls'), `description: ${String(item.description)}`);
    await vscode.commands.executeCommand('workbench.view.extension.codeExecutionMode');
  });

  await check("the Tools view shows the server's tools", async () => {
    const server = await waitFor('memory in the Tools view', () => ext.tools.servers().find((s) => s.name === 'memory' && s.state === 'running' && (s.tools?.length ?? 0) > 0));
    assert(server.tools?.some((t) => t.name === 'create_entities'), 'create_entities missing');
  });

  await check('the run panel opens for the run', async () => {
    const run = ext.runs.runs().find((r) => r.code.includes('create_entities'));
    assert(run, 'no run');
    await vscode.commands.executeCommand('codeExecutionMode.openRun', run.id);
    const panel = await waitFor('the panel', () => ext.panel());
    assert(panel.run.id === run.id, 'the panel shows another run');
    assert(panel.title.startsWith('Run: ok'), `panel title ${panel.title}`);
    await sleep(4000);
    await screenshot('run-panel');
  });

  await check('a file written to /work/out comes back with the result and is listed in the run panel', async () => {
    const out = await invoke('open("/work/out/report.txt", "w").write("host check\\n")');
    assert(out.includes('host check'), `the file is not in the result: ${out}`);
    const run = await waitFor('the run with its file', () => ext.runs.runs().find((r) => r.code.includes('report.txt') && r.files?.length === 1));
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
    const code = '# names in the memory graph\nkind = "person"\ngraph = await mcp_memory.read_graph()\nsorted(e["name"] for e in graph["entities"] if e["entityType"] == kind)';
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
    const text = await invoke('hits = await search_tool_docs("names of memory graph entities")\n(hits[0]["kind"], hits[0]["tool"], await run_snippet("graph_names"), await run_snippet("graph_names", kind="nobody"))');
    assert(text.includes("('snippet', 'graph_names', ['Ada'], [])"), `unexpected result: ${text}`);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });

  await check("Run Selection goes through VS Code's MCP client to the same bridge and session as the agent", async () => {
    await invoke('shared_marker = 41');
    const code = 'shared_marker + 1';
    const document = await vscode.workspace.openTextDocument({ language: 'python', content: `${code}\nprint("not selected")\n` });
    const editor = await vscode.window.showTextDocument(document);
    editor.selection = new vscode.Selection(0, 0, 0, code.length);
    await vscode.commands.executeCommand('codeExecutionMode.runSelection');
    const run = await waitFor('the selection in the Runs view', () => ext.runs.runs().find((r) => r.code === code && r.status));
    assert(run.status === 'ok' && run.value === '42', `the agent's variable was not there: ${run.status} ${run.value} ${run.error?.message ?? ''}`);
    assert(run.session === 'default', `session ${run.session}`);
    await waitFor('the panel for the selection', () => (ext.panel()?.run.id === run.id ? true : undefined), 10_000);
    await vscode.window.showTextDocument(document);
    await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
  });

  await check('a settings change restarts the bridge with the new server list', async () => {
    await settings.update(
      'servers',
      {
        memory: { command: process.execPath, args: [memoryServer], env: { MEMORY_FILE_PATH: join(ext.stateDir, 'memory.jsonl') }, description: 'Knowledge graph memory' },
        fixture: { command: process.execPath, args: [fixtureServer], description: 'Test fixture' },
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
    await waitFor('fixture tools in the Tools view', () => ext.tools.servers().find((s) => s.name === 'fixture' && (s.tools?.length ?? 0) > 0));
    await sleep(1000);
    await screenshot('views');
  });

  await check('what VS Code hands the model: a flood within the budget, a returned image once, no base64 as text', async () => {
    // Images come back as data parts (mimeType + bytes); everything else as text parts.
    const parts = async (code: string) => {
      const name = toolName();
      assert(name, 'run_python is not among vscode.lm.tools');
      const result = await vscode.lm.invokeTool(name, { input: { code }, toolInvocationToken: undefined }, new vscode.CancellationTokenSource().token);
      const text = result.content.map((part) => (part instanceof vscode.LanguageModelTextPart ? part.value : '')).join('');
      const data = result.content.filter((part): part is { mimeType: string; data: Uint8Array } => typeof part === 'object' && part !== null && 'mimeType' in part && 'data' in part);
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

  await check("the output channel has the bridge's notable events", async () => {
    // The LogOutputChannel writes a file under the window's exthost log folder.
    const root = join(ext.logDir, '..');
    const find = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? find(join(dir, e.name)) : e.name.endsWith('Code Execution Mode.log') ? [join(dir, e.name)] : []));
    const text = await waitFor('run events in the output channel', () => {
      const all = find(root).map((f) => readFileSync(f, 'utf8')).join('\n');
      return all.includes('run ok in') && all.includes('server fixture: running') ? all : undefined;
    }, 15_000);
    assert(text.includes('activated in'), 'no activation line');
  });

  await check('the status bar reports a stopped daemon', async () => {
    const saved = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = 'unix:///nonexistent/docker.sock';
    try {
      await settings.update('sandbox.runtime', 'docker', vscode.ConfigurationTarget.Global);
      await waitFor('the status bar to show docker down', async () => {
        await ext.runtime.refresh();
        return ext.runtime.text.includes('docker: daemon down') || undefined;
      }, 20_000).catch(() => assert(false, `status bar: ${ext.runtime.text}`));
    } finally {
      if (saved === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = saved;
      await settings.update('sandbox.runtime', process.env.CEM_HOST_RUNTIME ?? 'podman', vscode.ConfigurationTarget.Global);
    }
    await waitFor('the status bar to recover', async () => {
      await ext.runtime.refresh();
      return ext.runtime.text.includes(': ready') || undefined;
    }, 20_000).catch(() => assert(false, `status bar after restore: ${ext.runtime.text}`));
  });

  await check('${workspaceFolder} and a stored ${input:ID} reach a proxied server that VS Code starts', async () => {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    assert(folder, 'no workspace folder is open');
    await ext.secrets.set('fixture', 'inputs', 'token', 'input-value-42');
    await settings.update(
      'servers',
      {
        memory: { command: process.execPath, args: [memoryServer], env: { MEMORY_FILE_PATH: join(ext.stateDir, 'memory.jsonl') }, description: 'Knowledge graph memory' },
        fixture: { command: process.execPath, args: [fixtureServer], env: { CEM_WS: '${workspaceFolder}', CEM_TOKEN: '${input:token}' }, description: 'Test fixture' },
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
    await waitFor('the state dir to be made again', () => (existsSync(ext.stateDir) && ext.stateProblem() === undefined ? true : undefined), 15_000);
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
      assert(ext.stateWarnings.some((w) => w.includes(ext.stateDir)), `warnings: ${ext.stateWarnings.join(' | ')}`);
      const out = await invoke('"while-unwritable"');
      assert(out.includes('the audit log is not being written'), out);
    } finally {
      rmSync(ext.stateDir, { force: true });
    }
    await waitFor('the state dir to be usable again', () => (existsSync(ext.stateDir) && ext.stateProblem() === undefined ? true : undefined), 15_000);
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
    await waitFor('the status bar to say the image is missing', () => (ext.runtime.text.includes(': image missing') ? true : undefined), 30_000).catch(() =>
      assert(false, `status bar: ${ext.runtime.text}`),
    );
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
    const run = await waitFor('the failed run in the Runs view', () => ext.runs.runs().find((r) => r.code.includes('image-missing-probe') && r.status === 'error'));
    assert(run.durationMs !== undefined, 'the failed run has no duration');
    const description = String(ext.runs.getTreeItem({ kind: 'run', run }).description);
    assert(/^error · [\d.]+ (ms|s) · /.test(description), `description: ${description}`);
  });

  await check('Diagnose opens a report with the failed image check and a Pull button', async () => {
    await vscode.commands.executeCommand('codeExecutionMode.diagnoseRuntime');
    const panel = await waitFor('the report for the missing image', () => {
      const open = ext.diagnosePanel();
      return open?.report?.image === missingImage ? open : undefined;
    }, 30_000);
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
    await waitFor('the report to say ready', () => (panel.title === 'Sandbox: ready' ? true : undefined), 10_000).catch(() => assert(false, `title: ${panel.title}`));
  });

  await consentChecks({ check, assert, waitFor, invoke, startBridge, sleep }, ext, fixtureServer, image);

  save(true);
}

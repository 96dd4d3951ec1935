// The run-log panel: one run for auditing, titled by its code's first line and the time it
// started, with the code highlighted, stdout and stderr (long ones folded, searchable, openable
// in an editor; base64 never shown as text), the value or error, images (click to zoom, or open
// full size), every tool call with its arguments, outcome and time (its own, apart from the wait
// for the user's confirmation), the confirmations asked, the requests proxied servers made of
// the bridge's client (roots, elicitation, sampling), the requests through the sandbox's network
// proxy and the questions about them, the snippets run and saved, the token
// meter (what the model got, what stayed in the sandbox, what a direct listing would cost), and
// export to JSON. Strict CSP: no inline script but the nonce'd one, resources only from media/
// and the state dir's images.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import hljs from 'highlight.js/lib/core';
import python from 'highlight.js/lib/languages/python';
import * as vscode from 'vscode';
import { PRIVATE_FILE_MODE } from '../../state/private-files.ts';
import { displayStatus, type RunRecord } from '../../state/run-log/reader.ts';
import { escapeHtml as escape } from './html.ts';
import { panelIcon } from './panel-icon.ts';
import { outputBlock, streamsJson, withoutBase64 } from './run-panel-text.ts';
import { relayTable } from '../views/relay-text.ts';
import { networkSection } from '../views/network-text.ts';
import { plural } from '../../shared/plural.ts';
import { formatDuration } from '../../shared/durations.ts';
import { callConfirmations, callTime, runElapsed, runState, runTabTitle, runWaitedText } from '../views/run-text.ts';
import { METER_METHOD, meterPhrases } from '../views/meter-text.ts';

hljs.registerLanguage('python', python);

export class RunPanel implements vscode.Disposable {
  static current: RunPanel | undefined;
  private readonly panel: vscode.WebviewPanel;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly extensionUri: vscode.Uri;
  private readonly stateDir: string;
  run: RunRecord;
  /** The record last rendered: the run log changes for other runs too, and a re-render resets the page. */
  private rendered = '';
  /** The private folder of the copies "Open" makes of the run's files. */
  private copies: Promise<string> | undefined;

  static show(run: RunRecord, extensionUri: vscode.Uri, stateDir: string): RunPanel {
    if (RunPanel.current) {
      RunPanel.current.update(run);
      RunPanel.current.panel.reveal(undefined, true);
      return RunPanel.current;
    }
    RunPanel.current = new RunPanel(run, extensionUri, stateDir);
    return RunPanel.current;
  }

  private constructor(run: RunRecord, extensionUri: vscode.Uri, stateDir: string) {
    this.run = run;
    this.extensionUri = extensionUri;
    this.stateDir = stateDir;
    this.panel = vscode.window.createWebviewPanel(
      'codeExecutionMode.run',
      'Sandbox Run',
      { viewColumn: vscode.ViewColumn.Active, preserveFocus: true },
      {
        enableScripts: true,
        // VS Code's own find (Ctrl+F) over what the page shows; the page's search covers folded output too.
        enableFindWidget: true,
        localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'media'), vscode.Uri.file(join(stateDir, 'images'))],
      },
    );
    this.panel.iconPath = panelIcon(extensionUri);
    this.panel.onDidDispose(() => this.dispose(), undefined, this.disposables);
    this.panel.webview.onDidReceiveMessage(
      (message: { type?: string; index?: unknown; stream?: unknown }) => {
        if (message?.type === 'openText' && typeof message.stream === 'string') void this.openText(message.stream);
        if (message?.type === 'openImage' && typeof message.index === 'number') void this.openImage(message.index);
        if (message?.type === 'saveFile' && typeof message.index === 'number') void this.saveFile(message.index);
        if (message?.type === 'openFile' && typeof message.index === 'number') void this.openFile(message.index);
        if (message?.type === 'export') void this.exportJson();
        if (message?.type === 'copy') void vscode.env.clipboard.writeText(this.run.code);
        if (message?.type === 'saveSnippet') void vscode.commands.executeCommand('codeExecutionMode.saveRunAsSnippet', this.run.id);
      },
      undefined,
      this.disposables,
    );
    this.update(run);
  }

  get title(): string {
    return this.panel.title;
  }

  /** The page shown (read by the host tests). */
  get page(): string {
    return this.panel.webview.html;
  }

  update(run: RunRecord): void {
    this.run = run;
    const record = JSON.stringify(run);
    if (record === this.rendered) return;
    this.rendered = record;
    this.panel.title = runTabTitle(run);
    this.panel.webview.html = this.html(run);
  }

  private async exportJson(): Promise<void> {
    const target = await vscode.window.showSaveDialog({
      defaultUri: vscode.Uri.file(join(this.stateDir, `run-${this.run.id}.json`)),
      filters: { JSON: ['json'] },
    });
    if (!target) return;
    // The run holds code, output and tool arguments: owner-only, as in the state dir.
    await writeFile(target.fsPath, `${JSON.stringify(this.run, null, 2)}\n`, { mode: PRIVATE_FILE_MODE });
    await chmod(target.fsPath, PRIVATE_FILE_MODE).catch(() => undefined);
    void vscode.window.showInformationMessage(`Run exported to ${target.fsPath}`);
  }

  /** One of the run's texts, whole, in an untitled editor (the panel folds long ones). */
  private async openText(stream: string): Promise<void> {
    const text = this.streams(this.run)[stream];
    if (text === undefined) return;
    const document = await vscode.workspace.openTextDocument({ content: text, language: stream === 'code' ? 'python' : 'log' });
    await vscode.window.showTextDocument(document, { preview: true });
  }

  /** An image of the run at full size, in VS Code's image preview. */
  private async openImage(index: number): Promise<void> {
    const file = this.run.images[index]?.file;
    if (!file || !existsSync(join(this.stateDir, file))) return;
    await vscode.commands.executeCommand('vscode.open', vscode.Uri.file(join(this.stateDir, file)), { preview: true });
  }

  /** The run's texts by name, as the page's search and "Open in Editor" see them (base64 hidden). */
  private streams(run: RunRecord): Record<string, string> {
    const streams: Record<string, string> = {};
    if (run.stdout) streams.stdout = withoutBase64(run.stdout);
    if (run.stderr) streams.stderr = withoutBase64(run.stderr);
    if (run.value !== null) streams.result = withoutBase64(run.value);
    if (run.error) streams.error = withoutBase64(`${run.error.type}: ${run.error.message}\n\n${run.error.traceback ?? ''}`);
    return streams;
  }

  /** The saved copy of one of the run's /work/out files, when it is still in the state dir. */
  private outFile(index: number): { path: string; stored: string } | undefined {
    const file = this.run.files?.[index];
    if (!file?.file) return undefined;
    const stored = join(this.stateDir, file.file);
    if (!existsSync(stored)) {
      void vscode.window.showWarningMessage(`${file.path} is no longer in the state folder (pruned with the run log).`);
      return undefined;
    }
    return { path: file.path, stored };
  }

  /** Only here does a run's file reach the user's folders: where they choose. */
  private async saveFile(index: number): Promise<void> {
    const file = this.outFile(index);
    if (!file) return;
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    const name = basename(file.path);
    const target = await vscode.window.showSaveDialog({
      ...(folder ? { defaultUri: vscode.Uri.joinPath(folder, name) } : {}),
      title: `Save ${file.path} As`,
    });
    if (!target) return;
    await vscode.workspace.fs.writeFile(target, await readFile(file.stored));
    void vscode.window.showInformationMessage(`Saved ${file.path} to ${target.fsPath}`);
  }

  /** Opens a copy of the saved file (text in an editor, others as VS Code can). */
  private async openFile(index: number): Promise<void> {
    const file = this.outFile(index);
    if (!file) return;
    // A private copy under its own name (outside the workspace), so VS Code picks the right editor;
    // one folder per run and file, under one folder of the panel that goes with it.
    this.copies ??= mkdtemp(join(tmpdir(), 'cem-out-'));
    const dir = join(await this.copies, `${this.run.id.replace(/[^\w.-]/g, '_')}-${index}`);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const copy = join(dir, basename(file.path));
    await writeFile(copy, await readFile(file.stored), { mode: PRIVATE_FILE_MODE });
    await vscode.commands.executeCommand('vscode.open', vscode.Uri.file(copy), { preview: true });
  }

  private html(run: RunRecord): string {
    const webview = this.panel.webview;
    const nonce = randomBytes(16).toString('base64');
    const media = (file: string) => webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'media', file)).toString();
    const code = hljs.highlight(run.code, { language: 'python' }).value;
    const section = (title: string, body: string) => `<section><h2>${title}</h2>${body}</section>`;
    const streams = this.streams(run);
    const status = displayStatus(run);
    const state = runState(run);
    const facts = [
      `<span class="status ${escape(status)}">${escape(state)}</span>`,
      `session <code>${escape(run.session)}</code>`,
      escape(new Date(run.started).toLocaleString()),
      escape(runElapsed(run) ? `${runElapsed(run)}${runWaitedText(run)}` : ''),
      plural(run.toolCallCount, 'tool call'),
      run.truncated ? 'output truncated' : '',
      run.sessionLost ? 'session state lost' : '',
      run.sessionChange ? `started fresh: session ${escape(run.sessionChange.kind)} (${escape(run.sessionChange.reason)})` : '',
      run.sandbox ? sandboxWords(run.sandbox) : '',
      ...run.savedAsSnippets.map((s) => `saved as snippet <code>${escape(s.name)}</code>`),
    ].filter(Boolean);
    // Which snippets the run ran: name, folder, the hash of the source it got, and the arguments.
    const snippets = run.snippets
      .map(
        (s) =>
          `<tr><td><code>${escape(s.name)}</code></td><td>${escape(s.origin)}</td><td><code title="SHA-256 of the source, first digits">${escape(s.sha256)}</code></td>` +
          `<td><pre>${escape(s.arguments ?? '')}</pre></td><td>${escape(new Date(s.time).toLocaleTimeString())}</td></tr>`,
      )
      .join('');
    // Each question asked of the user: when, about which call, and the answer (absent while waiting).
    const confirmations = (run.confirmations ?? [])
      .map(
        (c) =>
          `<tr class="${c.answer === undefined || c.answer.startsWith('allowed') ? '' : 'bad'}"><td><code>${escape(c.server)}.${escape(c.tool)}</code></td>` +
          `<td>${escape(c.answer ?? 'waiting')}</td><td>${escape(new Date(c.asked).toLocaleTimeString())}${c.waitedMs !== undefined ? ` (${escape(formatDuration(c.waitedMs))})` : ''}</td>` +
          `<td><pre>${escape(JSON.stringify(c.arguments, null, 2))}</pre>${c.error ? `<div class="error">${escape(c.error)}</div>` : ''}</td></tr>`,
      )
      .join('');
    // A call's logged time includes the wait for the user's answer: shown apart.
    const confirmed = callConfirmations(run);
    const calls = run.toolCalls
      .map(
        (c, i) =>
          `<tr class="${c.outcome === 'ok' ? '' : 'bad'}"><td><code>${escape(c.server)}.${escape(c.tool)}</code></td><td>${escape(c.outcome)}</td>` +
          `<td>${escape(callTime(c, confirmed.get(i)))}</td><td><pre>${escape(JSON.stringify(c.arguments, null, 2))}</pre>${c.error ? `<div class="error">${escape(c.error)}</div>` : ''}</td></tr>`,
      )
      .join('');
    const omitted = run.omittedToolCalls;
    const omittedNote = omitted
      ? `<p class="note">${plural(omitted.count, 'more tool call', 'more tool calls')} not logged one by one (the run's budget in the log): ` +
        `${Object.entries(omitted.byTool)
          .map(([tool, n]) => `<code>${escape(tool)}</code> &times;${n}`)
          .join(', ')}; ` +
        `${Object.entries(omitted.byOutcome)
          .map(([outcome, n]) => `${escape(outcome)} ${n}`)
          .join(', ')}.</p>`
      : '';
    // Images beyond a run's budget were never stored; old ones are pruned with the log.
    const images = run.images
      .map((image, i) =>
        image.file && existsSync(join(this.stateDir, image.file))
          ? `<figure><img class="zoomable" title="Click to zoom" alt="image ${i + 1} emitted by the run" src="${webview.asWebviewUri(vscode.Uri.file(join(this.stateDir, image.file))).toString()}">` +
            `<figcaption>${escape(image.mime)}, ${image.bytes} bytes <button class="open-image" data-index="${i}">Open Full Size</button></figcaption></figure>`
          : `<p>${escape(image.mime)}, ${image.bytes} bytes (${escape(image.file ? 'pruned from the state folder' : (image.skipped ?? 'not stored'))})</p>`,
      )
      .join('');
    const files = (run.files ?? [])
      .map((file, i) => {
        const stored = file.file && existsSync(join(this.stateDir, file.file));
        const state = stored ? '' : ` (${escape(file.file ? 'pruned from the state folder' : (file.skipped ?? 'not stored'))})`;
        const buttons = stored
          ? ` <button class="save-file" data-index="${i}">Save As…</button> <button class="open-file" data-index="${i}">Open</button>`
          : '';
        return `<li><code>/work/out/${escape(file.path)}</code>, ${file.bytes} bytes${state}${buttons}</li>`;
      })
      .join('');
    // Requests through the sandbox's network proxy, and the questions asked about hosts.
    const network = networkSection(run);
    return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${webview.cspSource}; img-src ${webview.cspSource}; script-src 'nonce-${nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${media('run-panel.css')}"><title>Sandbox Run</title></head>
<body>
<header><h1>Sandbox run</h1><div class="facts">${facts.join(' · ')}</div>
<div class="actions"><button id="copy">Copy code</button><button id="export">Export JSON</button><button id="save-snippet" title="Save this run's code as a snippet the model can find and run">Save as Snippet…</button>
${Object.keys(streams).length > 0 ? '<input id="search" type="search" placeholder="Search output" aria-label="Search the run\'s output, folded lines too">' : ''}</div>
<div id="search-results" hidden></div></header>
${section('Code', `<pre class="code hljs"><code>${code}</code></pre>`)}
${streams.stdout !== undefined ? section('stdout', outputBlock('stdout', streams.stdout)) : ''}
${streams.stderr !== undefined ? section('stderr', outputBlock('stderr', streams.stderr, 'stderr')) : ''}
${streams.result !== undefined ? section('Result', outputBlock('result', streams.result)) : ''}
${streams.error !== undefined ? section('Error', outputBlock('error', streams.error, 'stderr')) : ''}
${images ? section('Images', images) : ''}
${files ? section('Files', `<ul class="files">${files}</ul>`) : ''}
${section('Tool calls', calls ? `<table><thead><tr><th>tool</th><th>outcome</th><th>time</th><th>arguments</th></tr></thead><tbody>${calls}</tbody></table>${omittedNote}` : omittedNote || '<p>None.</p>')}
${run.meter ? section('Token meter', meterTable(run.meter)) : ''}
${snippets ? section('Snippets run', `<table><thead><tr><th>snippet</th><th>folder</th><th>source hash</th><th>arguments</th><th>time</th></tr></thead><tbody>${snippets}</tbody></table>`) : ''}
${confirmations ? section('Confirmations', `<table><thead><tr><th>tool</th><th>answer</th><th>asked</th><th>arguments</th></tr></thead><tbody>${confirmations}</tbody></table>`) : ''}
${run.relays.length > 0 ? section('Requests from servers', relayTable(run.relays)) : ''}
${network ? section('Network', network) : ''}
<p class="id">run ${escape(run.id)}</p>
<script nonce="${nonce}" type="application/json" id="streams">${streamsJson(streams)}</script>
<script nonce="${nonce}" src="${media('run-panel.js')}"></script>
</body></html>`;
  }

  dispose(): void {
    RunPanel.current = undefined;
    void this.copies?.then((dir) => rm(dir, { recursive: true, force: true })).catch(() => undefined);
    this.panel.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

/** The run's token meter: one row per figure, and how they are counted. */
function meterTable(meter: NonNullable<RunRecord['meter']>): string {
  const { model, kept, listing } = meterPhrases(meter);
  const rows = [model, kept, listing].map((phrase) => `<tr><td>${escape(phrase)}</td></tr>`).join('');
  return `<table class="meter"><tbody>${rows}</tbody></table><p class="note">${escape(METER_METHOD)}</p>`;
}

/** Where a run ran, as the panel says it. */
function sandboxWords(sandbox: { runtime: string; isolation: string; ociRuntime?: string | undefined }): string {
  if (sandbox.isolation === 'wasm') return 'WebAssembly sandbox';
  const tier = sandbox.isolation === 'gVisor' ? 'gVisor' : `container${sandbox.ociRuntime ? ` (${escape(sandbox.ociRuntime)})` : ''}`;
  return `${escape(sandbox.runtime)}, ${tier}`;
}

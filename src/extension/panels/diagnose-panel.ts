// The Diagnose Sandbox Runtime report: a webview with the verdict, each runtime's checks and
// problems, and a button per fix. A fix runs only on its button's click: commands go to a
// terminal the person sees, settings open in the Settings editor, docs in the browser. The
// webview names a fix by position in the report it was shown; the command text itself always
// comes from the report held here, never from the webview.
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import { z } from 'zod';
import { type Fix, reportLines, type SandboxReport } from '../../sandbox/index.ts';
import { diagnoseHtml } from './report-view.ts';
import { panelIcon } from './panel-icon.ts';

/** What the panel asks of its owner. */
export interface DiagnoseActions {
  checkAgain(): Promise<void>;
  pull(): Promise<void>;
  /** Builds the image with sandbox.packages. */
  build?(): Promise<void>;
}

const FIX_ACTIONS = ['pull', 'build', 'copy', 'terminal', 'setting', 'docs'] as const;
type FixAction = (typeof FIX_ACTIONS)[number];

const messageSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('checkAgain') }),
  z.object({ type: z.literal('copyReport') }),
  z.object({ type: z.literal('showOutput') }),
  z.object({
    type: z.literal('fix'),
    runtime: z.number().int().min(0),
    fix: z.number().int().min(0),
    action: z.enum(FIX_ACTIONS),
  }),
]);

export class DiagnosePanel implements vscode.Disposable {
  static current: DiagnosePanel | undefined;
  private readonly panel: vscode.WebviewPanel;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly extensionUri: vscode.Uri;
  private actions: DiagnoseActions;
  private busy: string | undefined;
  private terminal: vscode.Terminal | undefined;
  private disposed = false;
  /** The report shown; undefined until the first check ends. */
  report: SandboxReport | undefined;
  /** sandbox.network in words, shown and copied with the report. */
  network: string | undefined;

  static show(extensionUri: vscode.Uri, actions: DiagnoseActions): DiagnosePanel {
    if (DiagnosePanel.current) {
      DiagnosePanel.current.actions = actions;
      DiagnosePanel.current.panel.reveal();
      return DiagnosePanel.current;
    }
    DiagnosePanel.current = new DiagnosePanel(extensionUri, actions);
    return DiagnosePanel.current;
  }

  private constructor(extensionUri: vscode.Uri, actions: DiagnoseActions) {
    this.extensionUri = extensionUri;
    this.actions = actions;
    this.panel = vscode.window.createWebviewPanel('codeExecutionMode.diagnose', 'Sandbox Runtime', vscode.ViewColumn.Active, {
      enableScripts: true,
      localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'media')],
    });
    this.panel.iconPath = panelIcon(extensionUri);
    this.panel.onDidDispose(() => this.dispose(), undefined, this.disposables);
    this.panel.webview.onDidReceiveMessage((raw: unknown) => void this.onMessage(raw), undefined, this.disposables);
    vscode.window.onDidCloseTerminal((t) => t === this.terminal && (this.terminal = undefined), undefined, this.disposables);
    this.render();
  }

  get title(): string {
    return this.panel.title;
  }

  /** The webview's current HTML (for the tests). */
  get html(): string {
    return this.panel.webview.html;
  }

  setBusy(what: string): void {
    this.busy = what;
    this.render();
  }

  update(report: SandboxReport): void {
    this.report = report;
    this.busy = undefined;
    this.render();
  }

  private render(): void {
    if (this.disposed) return;
    const webview = this.panel.webview;
    const media = (file: string) => webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'media', file)).toString();
    this.panel.title = this.report
      ? `Sandbox: ${this.report.chosen ? 'ready' : this.report.wasm?.ready ? 'WebAssembly' : 'not ready'}`
      : 'Sandbox Runtime';
    webview.html = diagnoseHtml(this.report, {
      nonce: randomBytes(16).toString('base64'),
      cspSource: webview.cspSource,
      styleUri: media('diagnose-panel.css'),
      scriptUri: media('diagnose-panel.js'),
      busy: this.busy,
      network: this.network,
    });
  }

  private async onMessage(raw: unknown): Promise<void> {
    const parsed = messageSchema.safeParse(raw);
    if (!parsed.success) return;
    const message = parsed.data;
    if (message.type === 'checkAgain') return this.actions.checkAgain();
    if (message.type === 'showOutput') return void vscode.commands.executeCommand('codeExecutionMode.showOutput');
    if (!this.report) return;
    if (message.type === 'copyReport') {
      const network = this.network ? `Network (sandbox.network): ${this.network}\n` : '';
      await vscode.env.clipboard.writeText(`${reportLines(this.report).join('\n')}\n${network}`);
      vscode.window.setStatusBarMessage('Sandbox report copied', 3000);
      return;
    }
    const fix = this.report.runtimes[message.runtime]?.fixes[message.fix];
    if (fix) await this.apply(fix, message.action);
  }

  private async apply(fix: Fix, action: FixAction): Promise<void> {
    if (action === 'pull' && fix.kind === 'pull') {
      await this.actions.pull();
    } else if (action === 'build' && fix.kind === 'build') {
      await this.actions.build?.();
    } else if (action === 'copy' && fix.command) {
      await vscode.env.clipboard.writeText(fix.command);
      vscode.window.setStatusBarMessage(`Copied: ${fix.command}`, 3000);
    } else if (action === 'terminal' && fix.command) {
      // A terminal the person sees, so that sudo can ask for a password and the output stays.
      this.terminal ??= vscode.window.createTerminal({ name: 'Sandbox fix', iconPath: new vscode.ThemeIcon('tools') });
      this.terminal.show();
      this.terminal.sendText(fix.command, true);
    } else if (action === 'setting' && fix.setting) {
      await vscode.commands.executeCommand('workbench.action.openSettings', `codeExecutionMode.${fix.setting}`);
    } else if (action === 'docs' && fix.url && /^https:\/\//.test(fix.url)) {
      await vscode.env.openExternal(vscode.Uri.parse(fix.url));
    }
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    if (DiagnosePanel.current === this) DiagnosePanel.current = undefined;
    this.panel.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

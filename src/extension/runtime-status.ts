// The status bar item for the container runtime (ready / daemon down / not installed /
// limits not enforced), the "Diagnose Sandbox Runtime" command, and image preparation.
import * as vscode from 'vscode';
import type { SandboxConfig } from '../config/schema.ts';
import { pullImage } from '../sandbox/image.ts';
import { probeRuntime, type RuntimeStatus } from '../sandbox/runtime/detect.ts';

const LABELS: Record<RuntimeStatus['state'], [string, string]> = {
  ready: ['$(vm-active)', 'ready'],
  'limits-not-enforced': ['$(warning)', 'limits not enforced'],
  'daemon-down': ['$(vm-outline)', 'daemon down'],
  'not-installed': ['$(circle-slash)', 'not installed'],
};

export class RuntimeStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly log: vscode.LogOutputChannel;
  private sandbox: SandboxConfig;
  private statuses: RuntimeStatus[] = [];
  private checking: Promise<RuntimeStatus[]> | undefined;

  constructor(sandbox: SandboxConfig, log: vscode.LogOutputChannel) {
    this.sandbox = sandbox;
    this.log = log;
    this.item = vscode.window.createStatusBarItem('codeExecutionMode.runtime', vscode.StatusBarAlignment.Right, 100);
    this.item.name = 'Code Execution Mode Sandbox';
    this.item.command = 'codeExecutionMode.diagnoseRuntime';
    this.item.text = '$(loading~spin) Sandbox';
    this.item.show();
  }

  get text(): string {
    return this.item.text;
  }

  /** The runtime the sandbox will use, or the first candidate when none is usable. */
  get current(): RuntimeStatus | undefined {
    return this.statuses.find((s) => s.state === 'ready' || s.state === 'limits-not-enforced') ?? this.statuses[0];
  }

  setSandbox(sandbox: SandboxConfig): void {
    this.sandbox = sandbox;
    void this.refresh();
  }

  /** Probes the candidate runtimes (in order) and updates the item. */
  refresh(): Promise<RuntimeStatus[]> {
    this.checking ??= (async () => {
      const names = this.sandbox.runtime === 'auto' ? this.sandbox.runtimeOrder : [this.sandbox.runtime];
      const statuses: RuntimeStatus[] = [];
      for (const name of names) {
        const status = await probeRuntime(name);
        statuses.push(status);
        if (status.state === 'ready') break;
      }
      this.statuses = statuses;
      this.render();
      return statuses;
    })().finally(() => (this.checking = undefined));
    return this.checking;
  }

  private render(): void {
    const status = this.current;
    if (!status) return;
    const [icon, label] = LABELS[status.state];
    this.item.text = `${icon} ${status.name}: ${label}`;
    const ok = status.state === 'ready';
    this.item.backgroundColor = ok ? undefined : new vscode.ThemeColor(status.state === 'limits-not-enforced' ? 'statusBarItem.warningBackground' : 'statusBarItem.errorBackground');
    const md = new vscode.MarkdownString(`**Sandbox runtime: ${status.name}** ${status.version ?? ''}\n\n`);
    for (const s of this.statuses) md.appendMarkdown(`- ${s.name}: ${LABELS[s.state][1]}${s.rootless ? ' (rootless)' : ''}\n`);
    for (const problem of status.problems) md.appendMarkdown(`\n${problem}\n`);
    md.appendMarkdown('\nClick to diagnose.');
    this.item.tooltip = md;
    this.log.info(`runtime: ${this.statuses.map((s) => `${s.name}=${s.state}`).join(', ')}`);
  }

  async diagnose(): Promise<void> {
    const statuses = await this.refresh();
    const lines = statuses.map((s) => {
      const facts = [s.version, s.rootless === undefined ? '' : s.rootless ? 'rootless' : 'rootful', s.cgroupVersion ? `cgroups ${s.cgroupVersion}` : ''].filter(Boolean).join(', ');
      return `${s.name}: ${LABELS[s.state][1]}${facts ? ` (${facts})` : ''}${s.problems.map((p) => `\n  - ${p}`).join('')}`;
    });
    this.log.info(`Diagnose Sandbox Runtime:\n${lines.join('\n')}\nimage: ${this.sandbox.image}`);
    const usable = statuses.some((s) => s.state === 'ready' || s.state === 'limits-not-enforced');
    const detail = `${lines.join('\n')}\n\nImage: ${this.sandbox.image}`;
    const actions = usable ? ['Prepare Sandbox Image', 'Show Output'] : ['Install Podman', 'Show Output'];
    const choice = await (usable && statuses.every((s) => s.problems.length === 0)
      ? vscode.window.showInformationMessage('The sandbox runtime is ready.', { modal: false, detail }, ...actions)
      : vscode.window.showWarningMessage('The sandbox runtime needs attention.', { modal: false, detail }, ...actions));
    if (choice === 'Prepare Sandbox Image') await vscode.commands.executeCommand('codeExecutionMode.pullImage');
    else if (choice === 'Install Podman') await vscode.env.openExternal(vscode.Uri.parse('https://podman.io/docs/installation'));
    else if (choice === 'Show Output') this.log.show();
  }

  async pull(): Promise<void> {
    const sandbox = this.sandbox;
    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Preparing ${sandbox.image}`, cancellable: true },
      async (progress, token) => {
        const abort = new AbortController();
        token.onCancellationRequested(() => abort.abort());
        try {
          await pullImage(
            sandbox,
            (line) => {
              progress.report({ message: line.slice(0, 120) });
              this.log.info(line);
            },
            { signal: abort.signal },
          );
          void vscode.window.showInformationMessage(`The sandbox image ${sandbox.image} is ready.`);
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          this.log.error(message);
          void vscode.window.showErrorMessage(message);
        }
      },
    );
  }

  dispose(): void {
    this.item.dispose();
  }
}

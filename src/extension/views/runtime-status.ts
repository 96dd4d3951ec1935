// The sandbox status bar item and the checks behind it. Every check is checkSandbox, the same
// one Diagnose and the CLI's `doctor` use, so all three show the same findings: not just "does
// the CLI answer" but the daemon, the limits, the image, the init binary and a real start (the
// status bar's may read podman's kept `info`: checkSandboxKept; only Diagnose itself, opened or
// asked again, always asks podman).
// A missing image is offered for pulling once per image; nothing downloads without a click.
import * as vscode from 'vscode';
import type { SandboxConfig } from '../../config/schema.ts';
import { checkSandbox, checkSandboxKept, reportLines, type SandboxReport, stateLabel } from '../../sandbox/index.ts';
import { DiagnosePanel } from '../panels/diagnose-panel.ts';
import { buildWithProgress, type BuildOutcomeKind } from '../commands/image-build.ts';
import { pullWithProgress, type PullOutcome } from '../commands/image-pull.ts';
import { headline, packagesWords, statusText } from '../panels/report-view.ts';
import { networkReport } from '../../config/network-summary.ts';

export class RuntimeStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly log: vscode.LogOutputChannel;
  private readonly extensionUri: vscode.Uri;
  private sandbox: SandboxConfig;
  private latest = 0;
  private inFlight: { key: string; promise: Promise<SandboxReport> } | undefined;
  private pulling: Promise<PullOutcome> | undefined;
  private building: Promise<BuildOutcomeKind> | undefined;
  /** Every packages image offered for building, by tag (each at most once). */
  readonly buildOffers: string[] = [];
  private lastLogged = '';
  /** Every image offered for pulling, in order (each at most once; read by the tests). */
  readonly pullOffers: string[] = [];
  /** The last report shown. */
  report: SandboxReport | undefined;
  private readonly reported = new vscode.EventEmitter<SandboxReport>();
  /** Each report shown (the walkthrough's steps follow it). */
  readonly onDidReport = this.reported.event;

  constructor(sandbox: SandboxConfig, log: vscode.LogOutputChannel, extensionUri: vscode.Uri) {
    this.sandbox = sandbox;
    this.log = log;
    this.extensionUri = extensionUri;
    this.item = vscode.window.createStatusBarItem('codeExecutionMode.runtime', vscode.StatusBarAlignment.Right, 100);
    this.item.name = 'Code Execution Mode Sandbox';
    this.item.command = 'codeExecutionMode.diagnoseRuntime';
    this.item.text = '$(loading~spin) Sandbox';
    this.item.show();
  }

  get text(): string {
    return this.item.text;
  }

  /** The image of the last "Pull" offer. */
  get offeredPull(): string | undefined {
    return this.pullOffers.at(-1);
  }

  setSandbox(sandbox: SandboxConfig): void {
    this.sandbox = sandbox;
    // What was shown is stale now: say so until the new check ends.
    this.item.text = '$(loading~spin) Sandbox: checking';
    void this.refresh();
  }

  /**
   * Checks the sandbox (starts one container: keep it off the activation path) and updates
   * the item. Only the newest check is shown, so a settings change mid-check wins.
   * `all` checks every candidate runtime, as Diagnose does (the default while its report is
   * open, so that the report keeps every runtime). `fresh` asks every engine afresh, as Diagnose
   * itself does; other checks may read podman's kept `info`. Never rejects.
   */
  refresh(options: { all?: boolean; fresh?: boolean } = {}): Promise<SandboxReport> {
    const sandbox = this.sandbox;
    const all = options.all ?? DiagnosePanel.current !== undefined;
    const fresh = options.fresh === true;
    const key = `${JSON.stringify(sandbox)}|${all}|${fresh}`;
    if (this.inFlight?.key === key) return this.inFlight.promise;
    const seq = ++this.latest;
    const promise = (fresh ? checkSandbox(sandbox, { all }) : checkSandboxKept(sandbox, { all }))
      .catch((error: unknown): SandboxReport => {
        this.log.error(`sandbox check failed: ${error instanceof Error ? error.message : String(error)}`);
        return { image: sandbox.image, runtimes: [] };
      })
      .then((report) => {
        if (seq === this.latest) this.show(report);
        return report;
      })
      .finally(() => {
        if (this.inFlight?.promise === promise) this.inFlight = undefined;
      });
    this.inFlight = { key, promise };
    return promise;
  }

  /** Resolves once no check is under way (a window closed mid-check can leave its probe container half-made). */
  async settled(): Promise<void> {
    while (this.inFlight) await this.inFlight.promise;
  }

  private show(report: SandboxReport): void {
    this.report = report;
    const shown = headline(report);
    this.item.text = statusText(report);
    const wasm = !report.chosen && report.wasm?.ready;
    const packagesMissing = shown?.packages?.state === 'missing';
    const warn = shown?.state === 'limits-not-enforced' || shown?.state === 'image-missing' || packagesMissing;
    this.item.backgroundColor =
      (shown?.state === 'ready' && !packagesMissing) || wasm
        ? undefined
        : new vscode.ThemeColor(warn ? 'statusBarItem.warningBackground' : 'statusBarItem.errorBackground');
    const md = new vscode.MarkdownString(
      wasm
        ? `**Sandbox**: WebAssembly (${report.wasm?.detail ?? ''}). For full isolation and packages, install Podman.\n\n`
        : `**Sandbox** (image \`${report.image}\`): ${report.chosen ? `runs with ${report.chosen.name}` : 'cannot run yet'}\n\n`,
    );
    for (const s of report.runtimes)
      md.appendMarkdown(`- ${s.name}: ${stateLabel(s.state)}${s.version ? ` (${s.version}${s.rootless ? ', rootless' : ''})` : ''}\n`);
    for (const problem of shown?.problems ?? []) md.appendText(`\n${problem}\n`);
    md.appendMarkdown('\nClick for the full report.');
    this.item.tooltip = md;
    const text = reportLines(report).join('\n');
    if (text !== this.lastLogged) {
      this.lastLogged = text;
      this.log.info(`sandbox check:\n${text}`);
    }
    DiagnosePanel.current?.update(report);
    this.reported.fire(report);
    if (!report.chosen && shown?.state === 'image-missing') void this.offerPull(report.image, shown.name);
    if (report.chosen?.packages?.state === 'missing') void this.offerBuild(report.chosen.packages.tag, packagesWords(report.chosen));
  }

  /** Once per packages image: a notification with "Build" and "Not Now". */
  private async offerBuild(tag: string, words: string): Promise<void> {
    if (this.buildOffers.includes(tag)) return;
    this.buildOffers.push(tag);
    const choice = await vscode.window.showInformationMessage(
      `Sandbox ${words}: runs use ${this.sandbox.image} without codeExecutionMode.sandbox.packages until the sandbox image is built. Build it now? It downloads the packages once.`,
      'Build',
      'Not Now',
    );
    if (choice === 'Build') await this.build();
  }

  /** Builds the image with sandbox.packages (one build at a time), then checks again. */
  async build(): Promise<BuildOutcomeKind> {
    this.building ??= buildWithProgress(this.sandbox, this.log).finally(() => (this.building = undefined));
    const outcome = await this.building;
    await this.refresh();
    return outcome;
  }

  /** Once per image: a notification with "Pull" and "Not Now". */
  private async offerPull(image: string, runtime: string): Promise<void> {
    if (this.pullOffers.includes(image)) return;
    this.pullOffers.push(image);
    const choice = await vscode.window.showInformationMessage(
      `The sandbox image ${image} is not present in ${runtime}, so run_python cannot run yet. Pull it now? It is downloaded once.`,
      'Pull',
      'Not Now',
    );
    if (choice === 'Pull' && this.sandbox.image === image) await this.pull();
  }

  /** Pulls the configured image with progress (one pull at a time), then checks again. */
  async pull(): Promise<PullOutcome> {
    this.pulling ??= pullWithProgress(this.sandbox, this.log).finally(() => (this.pulling = undefined));
    const outcome = await this.pulling;
    await this.refresh();
    return outcome;
  }

  /** Opens the report at once, then fills it in: the check takes a container start. */
  async diagnose(): Promise<void> {
    const panel = DiagnosePanel.show(this.extensionUri, {
      checkAgain: () => this.diagnose(),
      pull: async () => {
        DiagnosePanel.current?.setBusy(`Pulling ${this.sandbox.image}…`);
        await this.pull();
      },
      build: async () => {
        DiagnosePanel.current?.setBusy('Building the sandbox image…');
        await this.build();
      },
    });
    panel.network = networkReport(this.sandbox.network);
    panel.setBusy('Checking the sandbox…');
    // show() fills the open report in, with whichever check is the newest.
    const report = await this.refresh({ all: true, fresh: true });
    this.log.info(
      `Diagnose Sandbox Runtime:\n${reportLines(report).join('\n')}\nNetwork (sandbox.network): ${networkReport(this.sandbox.network)}`,
    );
  }

  dispose(): void {
    this.item.dispose();
    this.reported.dispose();
  }
}

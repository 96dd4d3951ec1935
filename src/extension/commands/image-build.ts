// "Code Execution Mode: Build Sandbox Image": builds the image with sandbox.packages on the
// user's click, progress in a cancellable notification, every build and pip line in the output
// channel. The build reaches the package index; runs stay without a network.
import * as vscode from 'vscode';
import type { SandboxConfig } from '../../config/schema.ts';
import { buildPackagesImage } from '../../sandbox/index.ts';

export type BuildOutcomeKind = 'built' | 'failed' | 'cancelled' | 'nothing';

/** Never throws: the outcome says what happened, and the person has been told. */
export async function buildWithProgress(sandbox: SandboxConfig, log: vscode.LogOutputChannel): Promise<BuildOutcomeKind> {
  if (sandbox.packages.length === 0) {
    const choice = await vscode.window.showInformationMessage(
      'No packages are configured: list them in codeExecutionMode.sandbox.packages (e.g. "numpy", "pandas>=2"), then build the sandbox image.',
      'Open Setting',
    );
    if (choice) await vscode.commands.executeCommand('workbench.action.openSettings', 'codeExecutionMode.sandbox.packages');
    return 'nothing';
  }
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'Building the sandbox image', cancellable: true },
    async (progress, token): Promise<BuildOutcomeKind> => {
      const abort = new AbortController();
      const cancel = token.onCancellationRequested(() => abort.abort());
      try {
        const outcome = await buildPackagesImage(
          sandbox,
          (line) => {
            progress.report({ message: line.slice(0, 120) });
            log.info(`build: ${line}`);
          },
          { signal: abort.signal },
        );
        void vscode.window.showInformationMessage(
          outcome.reused
            ? `The sandbox image with ${outcome.packages.length} packages is already built.`
            : `The sandbox image with ${outcome.packages.length} packages is built (${(outcome.durationMs / 1000).toFixed(0)} s); new sandbox sessions use it.`,
        );
        return 'built';
      } catch (error) {
        if (abort.signal.aborted) {
          log.info('the sandbox image build was cancelled');
          return 'cancelled';
        }
        const message = error instanceof Error ? error.message : String(error);
        log.error(message);
        void vscode.window.showErrorMessage(message, 'Show Output').then((choice) => choice && log.show());
        return 'failed';
      } finally {
        cancel.dispose();
      }
    },
  );
}

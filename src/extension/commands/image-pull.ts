// Pulling the sandbox image on the user's click: progress in a cancellable notification, the
// runtime's output in the log. Nothing here runs unless a person asked for the pull.
import * as vscode from 'vscode';
import type { SandboxConfig } from '../../config/schema.ts';
import { pullImage } from '../../sandbox/index.ts';

export type PullOutcome = 'pulled' | 'failed' | 'cancelled';

/** Never throws: the outcome says what happened, and the person has been told. */
export async function pullWithProgress(sandbox: SandboxConfig, log: vscode.LogOutputChannel): Promise<PullOutcome> {
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Pulling ${sandbox.image}`, cancellable: true },
    async (progress, token): Promise<PullOutcome> => {
      const abort = new AbortController();
      const cancel = token.onCancellationRequested(() => abort.abort());
      try {
        await pullImage(
          sandbox,
          (line) => {
            progress.report({ message: line.slice(0, 120) });
            log.info(`pull: ${line}`);
          },
          { signal: abort.signal },
        );
        void vscode.window.showInformationMessage(`The sandbox image ${sandbox.image} is ready.`);
        return 'pulled';
      } catch (error) {
        if (abort.signal.aborted) {
          log.info(`pull of ${sandbox.image} cancelled`);
          void vscode.window.showInformationMessage(`Pulling ${sandbox.image} was cancelled.`);
          return 'cancelled';
        }
        const message = error instanceof Error ? error.message : String(error);
        log.error(message);
        void vscode.window
          .showErrorMessage(message, 'Diagnose')
          .then((choice) => choice && vscode.commands.executeCommand('codeExecutionMode.diagnoseRuntime'));
        return 'failed';
      } finally {
        cancel.dispose();
      }
    },
  );
}

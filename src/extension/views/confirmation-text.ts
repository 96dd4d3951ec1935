// How questions waiting for the user are found in the run log and said in the status bar and
// the notification (pending-confirmations.ts). No `vscode` here, so the unit tests check the wording.
import { displayStatus, waitingForConfirmation, type RunRecord } from '../../state/run-log/reader.ts';

/** A question waiting for an answer: its run, and the tool it asks about. */
export interface PendingConfirmation {
  run: string;
  session: string;
  server: string;
  tool: string;
  /** When it was asked (with the run, its identity). */
  asked: string;
}

/** The questions open now, oldest first: asked, not answered, in runs still going (with `owner`, of that window's bridge only). */
export function pendingConfirmations(runs: RunRecord[], now = Date.now(), owner?: string): PendingConfirmation[] {
  return runs
    .filter((run) => (owner === undefined || run.owner === owner) && displayStatus(run, now) === 'running' && waitingForConfirmation(run))
    .flatMap((run) =>
      run.confirmations
        .filter((c) => c.answer === undefined)
        .map((c) => ({ run: run.id, session: run.session, server: c.server, tool: c.tool, asked: c.asked })),
    );
}

/** The status bar's words for the open questions. */
export function pendingText(pending: PendingConfirmation[]): string {
  return pending.length === 1 ? '$(bell-dot) Confirm a tool call' : `$(bell-dot) Confirm ${pending.length} tool calls`;
}

/** The notification's words for one question. */
export function pendingMessage(question: PendingConfirmation): string {
  return (
    `A sandboxed call of ${question.server}.${question.tool} (session "${question.session}") waits for your answer. ` +
    "VS Code's question is in the notifications: Respond, then Enter, allows this one call; Cancel, under its More Actions, refuses it."
  );
}

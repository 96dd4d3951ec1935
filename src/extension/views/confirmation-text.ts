// How questions waiting for the user (tool confirmations and network questions) are found in the
// run log and said in the status bar and the notification (pending-confirmations.ts). No `vscode` here, so the unit tests check the wording.
import { displayStatus, waitingForConfirmation, waitingForNetworkQuestion, type RunRecord } from '../../state/run-log/reader.ts';
import { escapeUnseen, oneLine } from '../../shared/shown-text.ts';
import { hostPortText } from './network-text.ts';

/** Runs still going (with `owner`, of that window's bridge only) that wait for the user as `waiting` tells. */
function openRuns(runs: RunRecord[], now: number, owner: string | undefined, waiting: (run: RunRecord) => boolean): RunRecord[] {
  return runs.filter((run) => (owner === undefined || run.owner === owner) && displayStatus(run, now) === 'running' && waiting(run));
}

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
  return openRuns(runs, now, owner, waitingForConfirmation).flatMap((run) =>
    run.confirmations
      .filter((c) => c.answer === undefined)
      .map((c) => ({ run: run.id, session: run.session, server: c.server, tool: c.tool, asked: c.asked })),
  );
}

/** A network question waiting for an answer: its run, and the host and port the code asked to reach. */
export interface PendingNetworkQuestion {
  run: string;
  session: string;
  host: string;
  port: number;
  /** When it was asked (with the run, its identity). */
  asked: string;
}

/** The network questions open now, oldest first, as pendingConfirmations finds the confirmations. */
export function pendingNetworkQuestions(runs: RunRecord[], now = Date.now(), owner?: string): PendingNetworkQuestion[] {
  return openRuns(runs, now, owner, waitingForNetworkQuestion).flatMap((run) =>
    run.networkQuestions
      .filter((q) => q.answer === undefined)
      .map((q) => ({ run: run.id, session: run.session, host: q.host, port: q.port, asked: q.asked ?? q.time })),
  );
}

/** The status bar's words for the open questions (tool confirmations, then network questions). */
export function pendingText(pending: PendingConfirmation[], network: PendingNetworkQuestion[] = []): string {
  if (network.length === 0)
    return pending.length === 1 ? '$(bell-dot) Confirm a tool call' : `$(bell-dot) Confirm ${pending.length} tool calls`;
  if (pending.length > 0) return `$(bell-dot) Answer ${pending.length + network.length} questions`;
  return network.length === 1 ? '$(bell-dot) Answer a network question' : `$(bell-dot) Answer ${network.length} network questions`;
}

/** host:port as the status bar, the notification and the Runs view show it (it came from sandboxed code): one line, nothing unseen. */
export function shownHostPort(question: Pick<PendingNetworkQuestion, 'host' | 'port'>, max = 270): string {
  return oneLine(escapeUnseen(hostPortText(question)), max);
}

/** The notification's words for one network question. */
export function pendingNetworkMessage(question: PendingNetworkQuestion): string {
  return (
    `Code in sandbox session "${oneLine(escapeUnseen(question.session), 100)}" asks to reach ${shownHostPort(question)} and waits for your answer. ` +
    'VS Code\'s question is in the notifications: Respond, then Enter, allows this one request (pick "this session" or "always" for more); ' +
    'Cancel, under its More Actions, refuses it.'
  );
}

/** The notification's words for one question. */
export function pendingMessage(question: PendingConfirmation): string {
  return (
    `A sandboxed call of ${question.server}.${question.tool} (session "${question.session}") waits for your answer. ` +
    "VS Code's question is in the notifications: Respond, then Enter, allows this one call; Cancel, under its More Actions, refuses it."
  );
}

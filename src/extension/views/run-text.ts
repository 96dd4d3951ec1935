// How runs are said in the views, the panel and the output channel: durations, counts with the
// right plural, a run's code by its first meaningful line (the Runs view's label, the panel's
// tab title), its state, duration and session beside it, and a tool call's own time apart from
// the time it waited for the user's confirmation (or network question). No `vscode` here, so the unit tests check
// the wording.
import {
  displayStatus,
  waitingForConfirmation,
  waitingForNetworkQuestion,
  type ConfirmationRecord,
  type RunRecord,
  type ToolCallRecord,
} from '../../state/run-log/reader.ts';
import { clip } from '../../shared/clip.ts';
import { plural } from '../../shared/plural.ts';
import { formatDuration } from '../../shared/durations.ts';
import { shownHostPort } from './confirmation-text.ts';

/** A line that only imports (`import os`, `from x import y`): a run says more after it, usually. */
const BARE_IMPORT = /^(import\s+[\w.]+(\s+as\s+\w+)?(\s*,\s*[\w.]+(\s+as\s+\w+)?)*|from\s+[\w.]+\s+import\s+[^#]+)\s*(#.*)?$/;

/**
 * The code's first line that says something, shortened to `max`: not blank, not a comment, and
 * not a bare import when a line that does more follows. Code of comments only is named by its
 * first one.
 */
export function codeLine(code: string, max = 60): string {
  const lines = code
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const statements = lines.filter((l) => !l.startsWith('#'));
  const line = statements.find((l) => !BARE_IMPORT.test(l)) ?? statements[0] ?? lines[0] ?? '';
  return clip(line, max) || '(empty)';
}

/** The code's first meaningful line, as the Runs view's row and the output channel name a run. */
export function runLabel(run: Pick<RunRecord, 'code'>): string {
  return codeLine(run.code);
}

/** Characters of a waiting network question's host:port in a run's state (a DNS name may have 253). */
const MAX_STATE_HOST_CHARS = 60;

/**
 * What a run is doing or did: "waiting for confirmation" while a tool confirmation is open,
 * "waiting for you: network access to host:port" while a network question is, else its status.
 */
export function runState(run: RunRecord, now = Date.now()): string {
  const status = displayStatus(run, now);
  if (status !== 'running') return status;
  if (waitingForConfirmation(run)) return 'waiting for confirmation';
  if (!waitingForNetworkQuestion(run)) return status;
  const open = run.networkQuestions.filter((q) => q.answer === undefined);
  const more = open.length > 1 ? ` (+${open.length - 1} more)` : '';
  return `waiting for you: network access to ${shownHostPort(open[0]!, MAX_STATE_HOST_CHARS)}${more}`;
}

/** Whether runState says the run waits for the user's answer (the Runs view marks it). */
export function waitsForUser(state: string): boolean {
  return state.startsWith('waiting for ');
}

/** How long it took, or while it runs how long it has been going (live). */
export function runElapsed(run: RunRecord, now = Date.now()): string {
  if (run.durationMs !== undefined) return formatDuration(run.durationMs);
  if (run.status !== undefined || displayStatus(run, now) !== 'running') return '';
  return formatDuration(Math.max(0, now - Date.parse(run.started)));
}

/** Beside a run's code in the Runs view: "ok · 1.2 s · default". */
export function runFacts(run: RunRecord, now = Date.now()): string {
  return [runState(run, now), runElapsed(run, now), run.session].filter(Boolean).join(' · ');
}

/** A run panel's tab: the code's first line, short, and the time the run started: "print(1) · 14:02:31". */
export function runTabTitle(run: Pick<RunRecord, 'code' | 'started'>): string {
  const started = new Date(run.started);
  const time = Number.isNaN(started.getTime()) ? '' : started.toTimeString().slice(0, 8);
  return [codeLine(run.code, 32), time].filter(Boolean).join(' · ');
}

/**
 * The confirmation each tool call waited for, by the call's index: the answered question about
 * the same tool asked while the call was going (a call's logged time includes that wait).
 */
export function callConfirmations(run: Pick<RunRecord, 'toolCalls' | 'confirmations'>): Map<number, ConfirmationRecord> {
  const found = new Map<number, ConfirmationRecord>();
  const used = new Set<ConfirmationRecord>();
  run.toolCalls.forEach((call, i) => {
    const ended = Date.parse(call.time);
    // Log times are whole milliseconds and written by another clock read: a little slack.
    const began = ended - call.durationMs - 50;
    const match = run.confirmations.find(
      (c) =>
        !used.has(c) &&
        c.waitedMs !== undefined &&
        c.server === call.server &&
        c.tool === call.tool &&
        Date.parse(c.asked) >= began &&
        Date.parse(c.answered ?? c.asked) <= ended + 50,
    );
    if (match) {
      used.add(match);
      found.set(i, match);
    }
  });
  return found;
}

/** A tool call's time without the user's part: "0.1 s (+6.8 s waiting for you)", or "0.1 s" when none was asked. */
export function callTime(call: Pick<ToolCallRecord, 'durationMs'>, confirmation?: Pick<ConfirmationRecord, 'waitedMs'>): string {
  const waited = Math.min(confirmation?.waitedMs ?? 0, call.durationMs);
  if (waited <= 0) return formatDuration(call.durationMs);
  return `${formatDuration(call.durationMs - waited)} (+${formatDuration(waited)} waiting for you)`;
}

/** ", 6.8 s of it waiting for you": the part of a run's time its confirmations waited for the user, when there was one. */
export function runWaitedText(run: Pick<RunRecord, 'confirmations'>): string {
  const waited = run.confirmations.reduce((sum, c) => sum + (c.waitedMs ?? 0), 0);
  return waited >= 1 ? `, ${formatDuration(waited)} of it waiting for you` : '';
}

/** The output channel's line for a run that ended. */
export function runEndLine(run: RunRecord): string {
  const took = formatDuration(run.durationMs);
  return `run ${run.status ?? 'lost'}${took ? ` in ${took}` : ''} (session ${run.session}, ${plural(run.toolCallCount, 'tool call')}): ${runLabel(run)}`;
}

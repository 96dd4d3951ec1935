// How runs are said in the views, the panel and the output channel: durations, counts with the
// right plural, a run's headline (state first) and its code's first line. No `vscode` here, so
// the unit tests check the wording.
import { displayStatus, waitingForConfirmation, type RunRecord } from '../../state/run-log/reader.ts';
import { clip } from '../../shared/clip.ts';
import { plural } from '../../shared/plural.ts';
import { formatDuration } from '../../shared/durations.ts';

/** The code's first line that says something (not blank, not a comment), shortened. */
export function runLabel(run: Pick<RunRecord, 'code'>): string {
  const line = run.code.split('\n').find((l) => l.trim() && !l.trim().startsWith('#')) ?? run.code;
  const trimmed = line.trim();
  return clip(trimmed, 60) || '(empty)';
}

/** What a run is doing or did: "waiting for confirmation" while a question is open, else its status. */
export function runState(run: RunRecord, now = Date.now()): string {
  const status = displayStatus(run, now);
  return status === 'running' && waitingForConfirmation(run) ? 'waiting for confirmation' : status;
}

/** How long it took, or while it runs how long it has been going (live). */
export function runElapsed(run: RunRecord, now = Date.now()): string {
  if (run.durationMs !== undefined) return formatDuration(run.durationMs);
  if (run.status !== undefined || displayStatus(run, now) !== 'running') return '';
  return formatDuration(Math.max(0, now - Date.parse(run.started)));
}

/** A run's row in the Runs view leads with this: "ok · 1.2 s · default". */
export function runHeadline(run: RunRecord, now = Date.now()): string {
  return [runState(run, now), runElapsed(run, now), run.session].filter(Boolean).join(' · ');
}

/** The output channel's line for a run that ended. */
export function runEndLine(run: RunRecord): string {
  const took = formatDuration(run.durationMs);
  return `run ${run.status ?? 'lost'}${took ? ` in ${took}` : ''} (session ${run.session}, ${plural(run.toolCallCount, 'tool call')}): ${runLabel(run)}`;
}

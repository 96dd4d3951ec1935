// How runs are said in the views, the panel and the output channel: durations, counts with the
// right plural, a run's code by its first meaningful line (the Runs view's label) and its state,
// duration and session beside it. No `vscode` here, so the unit tests check the wording.
import { displayStatus, waitingForConfirmation, type RunRecord } from '../../state/run-log/reader.ts';
import { clip } from '../../shared/clip.ts';
import { plural } from '../../shared/plural.ts';
import { formatDuration } from '../../shared/durations.ts';

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

/** Beside a run's code in the Runs view: "ok · 1.2 s · default". */
export function runFacts(run: RunRecord, now = Date.now()): string {
  return [runState(run, now), runElapsed(run, now), run.session].filter(Boolean).join(' · ');
}

/** The output channel's line for a run that ended. */
export function runEndLine(run: RunRecord): string {
  const took = formatDuration(run.durationMs);
  return `run ${run.status ?? 'lost'}${took ? ` in ${took}` : ''} (session ${run.session}, ${plural(run.toolCallCount, 'tool call')}): ${runLabel(run)}`;
}

// Reading the run log back into runs, for the extension's views and panel. The file is
// written by another process and may end in a half-written line: bad lines are skipped.
import { z } from 'zod';

const errorSchema = z.object({ type: z.string(), message: z.string(), traceback: z.string().optional() }).nullable();

const eventSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('run-start'), run: z.string(), session: z.string(), time: z.string(), code: z.string(), timeoutMs: z.number().optional() }),
  z.object({
    type: z.literal('tool-call'),
    run: z.string(),
    time: z.string(),
    server: z.string(),
    tool: z.string(),
    arguments: z.unknown(),
    outcome: z.string(),
    durationMs: z.number(),
    error: z.string().optional(),
  }),
  z.object({
    type: z.literal('run-end'),
    run: z.string(),
    session: z.string(),
    time: z.string(),
    status: z.string(),
    durationMs: z.number().optional(),
    stdout: z.string().optional(),
    stderr: z.string().optional(),
    value: z.string().nullable().optional(),
    error: errorSchema.optional(),
    images: z.array(z.object({ mime: z.string(), bytes: z.number(), file: z.string().regex(/^images\/[A-Za-z0-9-]+\.(png|jpg|gif|webp)$/).optional() })).optional(),
    toolCalls: z.number().optional(),
    truncated: z.boolean().optional(),
    sessionLost: z.boolean().optional(),
  }),
]);

export interface ToolCallRecord {
  time: string;
  server: string;
  tool: string;
  arguments: unknown;
  outcome: string;
  durationMs: number;
  error?: string;
}

export interface RunRecord {
  id: string;
  session: string;
  started: string;
  code: string;
  /** The run's time limit, when the log has it. */
  timeoutMs?: number;
  /** undefined while the run is in progress (or its bridge died before it ended). */
  status?: string;
  ended?: string;
  durationMs?: number;
  stdout: string;
  stderr: string;
  value: string | null;
  error: { type: string; message: string; traceback?: string } | null;
  images: Array<{ mime: string; bytes: number; file?: string }>;
  toolCalls: ToolCallRecord[];
  truncated: boolean;
  sessionLost: boolean;
}

/**
 * A run's status for display: its logged status; "running" while it may still be going; and
 * "lost" for a run that never ended although its time limit (plus a minute) has passed, as
 * when its bridge was killed outright.
 */
export function displayStatus(run: RunRecord, now = Date.now()): string {
  if (run.status) return run.status;
  const limit = (run.timeoutMs ?? 300_000) + 60_000;
  return now - Date.parse(run.started) > limit ? 'lost' : 'running';
}

/** Runs in the order they started, from the JSON lines of a run log. */
export function parseRunLog(text: string): RunRecord[] {
  const runs = new Map<string, RunRecord>();
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      continue;
    }
    const parsed = eventSchema.safeParse(raw);
    if (!parsed.success) continue;
    const event = parsed.data;
    let run = runs.get(event.run);
    if (!run) {
      run = {
        id: event.run,
        session: 'session' in event ? event.session : 'default',
        started: event.time,
        code: '',
        stdout: '',
        stderr: '',
        value: null,
        error: null,
        images: [],
        toolCalls: [],
        truncated: false,
        sessionLost: false,
      };
      runs.set(event.run, run);
    }
    if (event.type === 'run-start') {
      run.code = event.code;
      if (event.timeoutMs !== undefined) run.timeoutMs = event.timeoutMs;
      run.started = event.time;
      run.session = event.session;
    } else if (event.type === 'tool-call') {
      const { type: _type, run: _run, ...call } = event;
      run.toolCalls.push(call);
    } else {
      run.status = event.status;
      run.ended = event.time;
      // Failures logged by older bridges have no duration: the two timestamps give it.
      const elapsed = Date.parse(event.time) - Date.parse(run.started);
      if (event.durationMs !== undefined) run.durationMs = event.durationMs;
      else if (run.code && elapsed >= 0) run.durationMs = elapsed;
      run.stdout = event.stdout ?? '';
      run.stderr = event.stderr ?? '';
      run.value = event.value ?? null;
      run.error = event.error ?? null;
      run.images = event.images ?? [];
      run.truncated = event.truncated ?? false;
      run.sessionLost = event.sessionLost ?? false;
    }
  }
  return [...runs.values()];
}

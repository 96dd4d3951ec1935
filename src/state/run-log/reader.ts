// Reading the run log back into runs, for the extension's views and panel. The files are
// written by other processes (every bridge that shares the state dir) and may end in a
// half-written line: bad lines are skipped. A run's events may straddle a rotation (its start
// in runs.1.jsonl, its end in runs.jsonl), so events of all files are folded together.
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { runLogLineSchema, type RunLogEvent, type RunMeter } from './events.ts';
import { runLogFiles } from './files.ts';

export type { RunLogEvent, RunMeter } from './events.ts';

export interface ToolCallRecord {
  time: string;
  server: string;
  tool: string;
  arguments: unknown;
  outcome: string;
  durationMs: number;
  error?: string;
}

/** A confirmation asked of the user: when, about what, and (once answered) the answer. */
export interface ConfirmationRecord {
  asked: string;
  server: string;
  tool: string;
  arguments: unknown;
  /** allowed-once, allowed-for-session, declined, cancelled, timeout, no-client, too-large, stopped, failed; absent while waiting. */
  answer?: string;
  answered?: string;
  waitedMs?: number;
  error?: string;
}

/** A snippet the run ran with run_snippet: which one, from which folder, its source's hash, and the arguments (shortened). */
export interface SnippetUseRecord {
  time: string;
  name: string;
  origin: 'user' | 'workspace';
  sha256: string;
  arguments?: string;
}

/** The run's code saved as a snippet. */
export interface SnippetSavedRecord {
  time: string;
  name: string;
  sha256: string;
}

/** A request of a proxied server (roots, elicitation, sampling) relayed to the bridge's client, or refused, while the run waited on that server. */
export interface RelayRecord {
  time: string;
  server: string;
  /** roots/list, elicitation/create, sampling/createMessage, or a URL elicitation a tool call asked for. */
  method: string;
  /** answered, refused, failed, timeout. */
  outcome: string;
  /** An elicitation's answer: accept, decline, cancel. */
  action?: string;
  waitedMs: number;
  error?: string;
}

/** A request of the run's code through the bridge's network proxy (sandbox.network). */
export interface EgressRecordLine {
  time: string;
  host: string;
  port: number;
  /** The method of a plain-HTTP request; CONNECT for HTTPS. */
  method: string;
  address?: string;
  /** allowed, asked, refused, denied, private, capped, no-run, failed. */
  decision: string;
  bytesOut: number;
  bytesIn: number;
  durationMs: number;
  reason?: string;
}

/** A question to the user about a host the run's code asked to reach, and the answer. */
export interface NetworkQuestionRecord {
  /** When it was answered; while it waits, when it was asked. */
  time: string;
  /** When it was put to the user (absent from logs of older bridges, and for questions never put: no-client, stopped before its turn). */
  asked?: string;
  host: string;
  port: number;
  /** once, session, always, declined, cancelled, timeout, no-client, stopped, failed; absent while waiting. */
  answer?: string;
  waitedMs?: number;
  error?: string;
}

/** Tool calls of a run beyond its budget in the log: counted, not logged one by one. */
export interface OmittedToolCalls {
  count: number;
  byTool: Record<string, number>;
  byOutcome: Record<string, number>;
}

export interface RunRecord {
  id: string;
  session: string;
  /** The VS Code window whose bridge ran it, when the log says (see RunLogOptions.owner). */
  owner?: string;
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
  images: Array<{ mime: string; bytes: number; file?: string; skipped?: string }>;
  /** Files from /work/out (path relative to it); absent for runs without any. */
  files?: Array<{ path: string; bytes: number; file?: string; skipped?: string }>;
  /** The calls logged in full (the first ones, within the run's budget). */
  toolCalls: ToolCallRecord[];
  omittedToolCalls?: OmittedToolCalls;
  /** All the run's tool calls, logged or not (from its end, else what is logged). */
  toolCallCount: number;
  truncated: boolean;
  sessionLost: boolean;
  /** No sandbox could run the code: `error` says why. */
  notRun?: boolean;
  /** Why the session's earlier state was gone when the run started (reaped, evicted, reset, lost). */
  sessionChange?: { kind: string; reason: string };
  /** The runtime and isolation tier the run had (absent from logs of older bridges). */
  sandbox?: { runtime: string; isolation: string; ociRuntime?: string };
  /** What the model was handed, what stayed in the sandbox, what a direct listing would cost (absent from logs of older bridges). */
  meter?: RunMeter;
  /** Confirmations asked during the run, in order (absent from logs of older bridges). */
  confirmations: ConfirmationRecord[];
  /** Snippets the run ran, in order (absent from logs of older bridges). */
  snippets: SnippetUseRecord[];
  /** Snippets saved from this run's code. */
  savedAsSnippets: SnippetSavedRecord[];
  /** Requests from proxied servers relayed (or refused) while the run waited on them, in order. */
  relays: RelayRecord[];
  /** Requests through the network proxy, logged one by one (the first ones, within the run's budget). */
  egress: EgressRecordLine[];
  /** Requests through the network proxy beyond the run's budget in the log: counted by decision. */
  omittedEgress?: { count: number; byDecision: Record<string, number> };
  /** Questions asked about hosts the code asked to reach, in order. */
  networkQuestions: NetworkQuestionRecord[];
}

/** Whether the run is waiting for the user to answer a confirmation now. */
export function waitingForConfirmation(run: RunRecord): boolean {
  return run.status === undefined && run.confirmations.some((c) => c.answer === undefined);
}

/** Whether the run is waiting for the user to answer a network question now. */
export function waitingForNetworkQuestion(run: RunRecord): boolean {
  return run.status === undefined && run.networkQuestions.some((q) => q.answer === undefined);
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

/** The valid events among JSON lines; anything else (a half-written line) is skipped. */
export function parseEvents(text: string): RunLogEvent[] {
  const events: RunLogEvent[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      continue;
    }
    const parsed = runLogLineSchema.safeParse(raw);
    if (parsed.success) events.push(parsed.data);
  }
  return events;
}

/** Runs in the order they started, from events in the order they were read. */
export function foldRuns(events: Iterable<RunLogEvent>): RunRecord[] {
  const runs = new Map<string, RunRecord & { endedCount?: number }>();
  for (const event of events) {
    if (event.type === 'relay') {
      const { type: _type, runs: ids, ...relay } = event;
      // Only runs already started: a relay never makes a run of its own.
      for (const id of new Set(ids)) runs.get(id)?.relays.push({ ...relay });
      continue;
    }
    let run = runs.get(event.run);
    // A snippet saved from a run whose start has left the log makes no run of its own.
    if (!run && event.type === 'snippet-saved') continue;
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
        toolCallCount: 0,
        truncated: false,
        sessionLost: false,
        confirmations: [],
        snippets: [],
        savedAsSnippets: [],
        relays: [],
        egress: [],
        networkQuestions: [],
      };
      runs.set(event.run, run);
    }
    if (event.type === 'run-start') {
      run.code = event.code;
      if (event.timeoutMs !== undefined) run.timeoutMs = event.timeoutMs;
      run.started = event.time;
      run.session = event.session;
      if (event.owner !== undefined) run.owner = event.owner;
    } else if (event.type === 'tool-call') {
      const { type: _type, run: _run, ...call } = event;
      run.toolCalls.push(call);
    } else if (event.type === 'confirmation') {
      // An answer closes the oldest open question about the same tool; one without it stands alone.
      const open =
        event.phase === 'answered'
          ? run.confirmations.find((c) => c.answer === undefined && c.server === event.server && c.tool === event.tool)
          : undefined;
      const record: ConfirmationRecord = open ?? { asked: event.time, server: event.server, tool: event.tool, arguments: event.arguments };
      if (event.phase === 'answered') {
        record.answer = event.answer ?? 'unknown';
        record.answered = event.time;
        if (event.waitedMs !== undefined) record.waitedMs = event.waitedMs;
        if (event.error) record.error = event.error;
      }
      if (!open) run.confirmations.push(record);
    } else if (event.type === 'snippet') {
      const { type: _type, run: _run, ...use } = event;
      run.snippets.push(use);
    } else if (event.type === 'snippet-saved') {
      run.savedAsSnippets.push({ time: event.time, name: event.name, sha256: event.sha256 });
    } else if (event.type === 'egress') {
      const { type: _type, run: _run, ...request } = event;
      run.egress.push(request);
    } else if (event.type === 'egress-omitted') {
      run.omittedEgress = { count: event.count, byDecision: event.byDecision ?? {} };
    } else if (event.type === 'network-question') {
      const { type: _type, run: _run, session: _session, phase, ...question } = event;
      if (phase === 'asked') {
        run.networkQuestions.push({ time: event.time, asked: event.time, host: event.host, port: event.port });
        continue;
      }
      // An answer closes the oldest open question about the same host and port; one without it stands alone.
      const open = run.networkQuestions.find((q) => q.answer === undefined && q.host === event.host && q.port === event.port);
      const answered = { ...question, answer: question.answer ?? 'unknown' };
      if (open) Object.assign(open, answered);
      else run.networkQuestions.push(answered);
    } else if (event.type === 'tool-calls-omitted') {
      run.omittedToolCalls = { count: event.count, byTool: event.byTool ?? {}, byOutcome: event.byOutcome ?? {} };
    } else {
      run.status = event.status;
      run.ended = event.time;
      if (event.durationMs !== undefined) run.durationMs = event.durationMs;
      run.stdout = event.stdout ?? '';
      run.stderr = event.stderr ?? '';
      run.value = event.value ?? null;
      run.error = event.error ?? null;
      run.images = event.images ?? [];
      if (event.files) run.files = event.files;
      run.truncated = event.truncated ?? false;
      run.sessionLost = event.sessionLost ?? false;
      if (event.sessionChange) run.sessionChange = event.sessionChange;
      if (event.notRun) run.notRun = true;
      if (event.sandbox) run.sandbox = event.sandbox;
      if (event.meter) run.meter = event.meter;
      if (event.toolCalls !== undefined) run.endedCount = event.toolCalls;
    }
  }
  return [...runs.values()]
    .map(({ endedCount, ...run }) => {
      // Failures logged by older bridges have no duration: the two timestamps give it.
      if (run.durationMs === undefined && run.ended && run.code) {
        const elapsed = Date.parse(run.ended) - Date.parse(run.started);
        if (elapsed >= 0) run.durationMs = elapsed;
      }
      run.toolCallCount = endedCount ?? run.toolCalls.length + (run.omittedToolCalls?.count ?? 0);
      return run;
    })
    .sort((a, b) => (a.started < b.started ? -1 : a.started > b.started ? 1 : 0));
}

/** Runs in the order they started, from the JSON lines of a run log. */
export function parseRunLog(text: string): RunRecord[] {
  return foldRuns(parseEvents(text));
}

export interface RunLogReaderOptions {
  /** Stop reading older files once this many runs are known... */
  minRuns?: number;
  /** ...or this many bytes have been read. */
  maxBytes?: number;
}

interface FileCache {
  id: string;
  /** Where reading started (a tail of a file too big for the budget) and how far it got. */
  start: number;
  parsed: number;
  events: RunLogEvent[];
  runIds: Set<string>;
}

/**
 * Every run of every bridge that writes the state dir, across rotation: the current file and
 * the rotated ones, newest first until enough runs are known. Files are cached by identity
 * (a rotated file keeps its inode), and a growing file is read from where it was left.
 */
export class RunLogReader {
  private readonly dir: string;
  private readonly minRuns: number;
  private readonly maxBytes: number;
  private readonly cache = new Map<string, FileCache>();
  private last: { key: string; runs: RunRecord[] } | undefined;

  constructor(dir: string, options: RunLogReaderOptions = {}) {
    this.dir = dir;
    this.minRuns = options.minRuns ?? 300;
    this.maxBytes = options.maxBytes ?? 32 * 1024 * 1024;
  }

  runs(): RunRecord[] {
    const files = runLogFiles(this.dir).reverse();
    const chosen: FileCache[] = [];
    const runIds = new Set<string>();
    let bytes = 0;
    const keys: string[] = [];
    for (const path of files) {
      const entry = this.read(path, this.maxBytes);
      if (!entry) continue;
      chosen.unshift(entry);
      keys.push(`${entry.id}:${entry.parsed}`);
      for (const id of entry.runIds) runIds.add(id);
      bytes += entry.parsed - entry.start;
      if (runIds.size >= this.minRuns || bytes >= this.maxBytes) break;
    }
    const live = new Set(chosen.map((e) => e.id));
    for (const id of this.cache.keys()) if (!live.has(id)) this.cache.delete(id);
    const key = keys.join('|');
    if (this.last?.key !== key) this.last = { key, runs: foldRuns(chosen.flatMap((e) => e.events)) };
    return this.last.runs;
  }

  private read(path: string, limit: number): FileCache | undefined {
    let fd: number;
    try {
      // Never through a link planted as a log file, nor blocked on a FIFO (O_NOFOLLOW is 0 on Windows).
      fd = openSync(path, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0));
    } catch {
      return undefined; // rotated away or removed since listed, or a link
    }
    try {
      const stat = fstatSync(fd);
      if (!stat.isFile()) return undefined;
      // A deleted file's inode number may come back for a new one: its birth time tells them apart.
      const id = `${stat.dev}:${stat.ino}:${stat.birthtimeMs}`;
      let entry = this.cache.get(id);
      if (!entry || stat.size < entry.parsed) {
        const start = Math.max(0, stat.size - limit);
        entry = { id, start, parsed: start, events: [], runIds: new Set() };
        this.cache.set(id, entry);
      }
      if (stat.size > entry.parsed) {
        const buffer = Buffer.alloc(stat.size - entry.parsed);
        const got = readSync(fd, buffer, 0, buffer.length, entry.parsed);
        // Only whole lines: a line still being written is read next time.
        const end = buffer.lastIndexOf(0x0a, got - 1) + 1;
        if (end > 0) {
          const events = parseEvents(buffer.subarray(0, end).toString('utf8'));
          entry.events.push(...events);
          // A relay line makes no run of its own, so it does not count towards enough runs.
          for (const event of events) if (event.type !== 'relay') entry.runIds.add(event.run);
          entry.parsed += end;
        }
      }
      return entry;
    } finally {
      closeSync(fd);
    }
  }
}

// One run on a kernel container, from `exec` to `done` (or to the container's end): output,
// images, requests to the host, the time limit, and the stop (interrupt, then a restart of the
// interpreter when the code does not stop). Sessions (session.ts) queue runs and act on the
// restart a run asks for.
import { randomUUID } from 'node:crypto';
import type { SandboxConfig } from '../../config/schema.ts';
import type { ExitInfo, Kernel } from '../protocol/kernel-process.ts';
import { CappedText } from './capped-text.ts';
import { realClock, type Clock, type ClockTimer } from '../../shared/clock.ts';
import type { KernelError, KernelMessage } from '../protocol/messages.ts';
import { kindOf, type ErrorKind } from '../../shared/error-kinds.ts';
import { base64Bytes } from '../../shared/byte-size.ts';

export type RunStatus = 'ok' | 'error' | 'timeout' | 'cancelled';

export interface RunImage {
  mime: string;
  /** base64 */
  data: string;
}

/** Why a run found its session's earlier state gone (said in the result, with the reason). */
export interface SessionChange {
  kind: 'reaped' | 'evicted' | 'reset' | 'lost';
  reason: string;
}

/** A file from /work/out: its content (base64) unless a cap kept it back. */
export interface RunFile {
  path: string;
  bytes: number;
  data?: string;
  /** Why the content is not here: over the count, one file's size, the run's total, or the listing cut. */
  skipped?: 'count' | 'size' | 'total' | 'listing';
}

/** Files from /work/out kept per run (the kernel's own caps are the same). */
export const MAX_OUT_FILES = 20;
export const MAX_OUT_FILE_BYTES = 4 * 1024 * 1024;
export const MAX_OUT_TOTAL_BYTES = 8 * 1024 * 1024;
/** File entries (with or without content) kept per run. */
const MAX_OUT_ENTRIES = 201;

export interface RunResult {
  runId: string;
  session: string;
  status: RunStatus;
  stdout: string;
  stderr: string;
  /** repr() of the last bare expression, when it was not None. */
  value: string | null;
  error: KernelError | null;
  images: RunImage[];
  /** Files the code left under /work/out (the kernel sends them and empties the folder). */
  files?: RunFile[];
  durationMs: number;
  /** Characters cut from the middle of stdout / stderr (0 when nothing was cut). */
  omitted: { stdout: number; stderr: number; images: number };
  truncated: boolean;
  /** The session's interpreter is gone (killed, crashed, out of memory); state was lost. */
  sessionLost: boolean;
  /** The session's state was gone before this run started (not for a brand-new session). */
  sessionChange?: SessionChange;
  /** This run started a new container (a cold start). */
  coldStart: boolean;
  /** Requests the code made to the host (tool calls). */
  requests: number;
}

export interface RequestContext {
  runId: string;
  session: string;
  signal: AbortSignal;
  /** Adds an image to the run's result (as if the code had emitted it). */
  emitImage(mime: string, data: string): void;
  /**
   * Waits for `work` with the run's time limit paused: for waits that are not the code's doing
   * (a proxied server starting), each bounded by its own timeout. Nested and concurrent waits
   * share one pause; the time left is kept, not reset. The signal still stops the run.
   */
  untimed: <T>(work: Promise<T>) => Promise<T>;
  /** Names what this request waits for (e.g. "memory.read_graph"), for a timeout's message. */
  describe(what: string): void;
}

/** Serves a request from sandboxed code. Throwing sends the error back into Python. */
export type RequestHandler = (method: string, params: unknown, context: RequestContext) => Promise<unknown>;

/** A request the host refused unserved because no run of its own was in progress to own it. */
export interface RefusedRequest {
  /** The host's run it is recorded under: the one in progress, or the session's last. */
  run: string;
  method: string;
  params: unknown;
  reason: string;
}

/**
 * Answers a request that no run in progress owns (it came from code of a run that has ended,
 * a thread the code left behind, say), so that its caller gets an error instead of waiting for
 * ever, and tells `onRefused` so the refusal is on record.
 */
export function refuseRequest(
  container: Kernel,
  message: Extract<KernelMessage, { t: 'req' }>,
  refused: RefusedRequest,
  onRefused?: (refused: RefusedRequest) => void,
): void {
  container.send({
    t: 'res',
    id: message.id,
    ok: false,
    error: { type: 'RunEnded', kind: 'run-ended', message: `Refused: ${refused.reason}.` },
  });
  onRefused?.(refused);
}

export interface RunOptions {
  /** The run's id, when the caller wants to know it up front (for logs). */
  runId?: string;
  timeoutMs: number;
  signal?: AbortSignal;
  onOutput?: (stream: 'stdout' | 'stderr', text: string) => void;
  onRequest?: RequestHandler;
  /** Told of every request refused because its run had ended (for the audit record). */
  onRefusedRequest?: (refused: RefusedRequest) => void;
}

/**
 * What a container hears between runs: a request is refused (its run has ended) and put on
 * record; a `done` means the run before forged its end and its code may still be running.
 */
export function watchBetweenRuns(
  container: Kernel,
  lastRun: string,
  onRefused: RunOptions['onRefusedRequest'],
  onForgedEnd: (run: string) => void,
): void {
  if (!container.alive) return;
  container.on({
    message: (message) => {
      if (message.t === 'req') {
        const reason = `the call came from code of run ${message.run} after its end; calls are served only while their run is in progress`;
        refuseRequest(container, message, { run: lastRun, method: message.method, params: message.params, reason }, onRefused);
      } else if (message.t === 'done') {
        onForgedEnd(lastRun);
      }
    },
  });
}

export const MAX_IMAGES_PER_RUN = 16;
/** 8 MiB of image bytes, as base64 (the kernel refuses bigger images with a ValueError). */
export const MAX_IMAGE_BASE64_CHARS = Math.ceil((8 * 1024 * 1024) / 3) * 4;
export const MAX_REQUESTS_IN_FLIGHT = 64;
/**
 * What is left of the grace once the kernel saw the code catch its interrupt and go on (or
 * ignore SIGINT): code that ends right after catching it still ends on its own.
 */
export const IGNORED_GRACE_MS = 250;
/** At most this much of a run's time goes uncounted in untimed() waits (the longest connect timeout). */
export const MAX_UNTIMED_MS = 600_000;

export interface TrackedRun {
  result: RunResult;
  /**
   * The interpreter must be restarted before the next run (the code ignored its interrupt, or
   * left threads running). `result.error.message` then ends mid-sentence, for the session to
   * say what the restart did.
   */
  restart: boolean;
}

export interface RunSpec {
  container: Kernel;
  runId: string;
  session: string;
  config: SandboxConfig;
  options: RunOptions;
  /** This run started its container. */
  cold: boolean;
  /** performance.now() when the run was asked for. */
  started: number;
  code: string;
  /** Told when a `done` comes after the run ended: its end was forged (see watchBetweenRuns). */
  onForgedEnd?: (run: string) => void;
}

/** Runs `code` on a container; never rejects (a dead container is a lost session). */
export function runOnContainer(spec: RunSpec): Promise<TrackedRun> {
  return new RunTracker(spec).outcome;
}

/** Follows one run on a container from `exec` to `done` (or to the container's end). */
class RunTracker {
  readonly outcome: Promise<TrackedRun>;
  private readonly stdout: CappedText;
  private readonly stderr: CappedText;
  private readonly images: RunImage[] = [];
  private omittedImages = 0;
  private requests = 0;
  private inFlight = 0;
  /** What requests in flight wait for, by request id; named in a timeout's message. */
  private readonly waits = new Map<number, { what: string; since: number }>();
  private waitingAtStop: string[] = [];
  private stopping: 'timeout' | 'cancelled' | undefined;
  private ignored = false;
  /** Aborts the run's requests in flight; made by the first request (aborting costs a run tens of µs). */
  private requestsAbort: AbortController | undefined;
  private timers: NodeJS.Timeout[] = [];
  private readonly clock: RunClock;
  private settle!: (outcome: TrackedRun) => void;
  /** Echoed by the kernel's real `done` (see the protocol's `token`); randomUUID draws from a pool, randomBytes would not. */
  private readonly token = randomUUID();
  private readonly generation: number;

  private readonly container: Kernel;
  private readonly runId: string;
  private readonly session: string;
  private readonly config: SandboxConfig;
  private readonly options: RunOptions;
  private readonly cold: boolean;
  private readonly started: number;
  private readonly onForgedEnd: ((run: string) => void) | undefined;

  constructor(run: RunSpec) {
    const { container, runId, config, options, code } = run;
    this.container = container;
    this.runId = runId;
    this.session = run.session;
    this.config = config;
    this.options = options;
    this.cold = run.cold;
    this.started = run.started;
    this.onForgedEnd = run.onForgedEnd;
    this.stdout = new CappedText(config.maxOutputChars);
    this.stderr = new CappedText(config.maxOutputChars);
    this.generation = container.generation;
    this.outcome = new Promise((resolve) => (this.settle = resolve));
    container.on({
      message: (message) => this.onMessage(message),
      stderr: (text) => this.output('stderr', text),
      exit: (info) => this.onExit(info),
    });
    const onAbort = () => this.stop('cancelled');
    options.signal?.addEventListener('abort', onAbort, { once: true });
    this.outcome.finally(() => options.signal?.removeEventListener('abort', onAbort)).catch(() => undefined);
    this.clock = new RunClock(options.timeoutMs, () => this.stop('timeout'));
    // A container that ended before this run attached will never send `exit` again.
    const ended = container.exitStatus;
    if (ended) queueMicrotask(() => this.onExit(ended));
    else container.send({ t: 'exec', run: runId, code, token: this.token });
  }

  private output(stream: 'stdout' | 'stderr', text: string): void {
    (stream === 'stdout' ? this.stdout : this.stderr).append(text);
    this.options.onOutput?.(stream, text);
  }

  private onMessage(message: KernelMessage): void {
    switch (message.t) {
      case 'out':
        if (message.run === this.runId) this.output(message.stream, message.data);
        return;
      case 'image':
        if (message.run === this.runId) this.addImage(message.mime, message.data);
        return;
      case 'file':
        if (message.run === this.runId) this.addFile(message);
        return;
      case 'req':
        if (message.run !== this.runId) {
          const reason = `the call came from code of an earlier run (${message.run}), which has ended; calls are served only while their run is in progress`;
          return refuseRequest(
            this.container,
            message,
            { run: this.runId, method: message.method, params: message.params, reason },
            this.options.onRefusedRequest,
          );
        }
        void this.onRequest(message.id, message.method, message.params);
        return;
      case 'done':
        // Without this run's token: code guessing it (122 random bits), ignored.
        if (message.run === this.runId && message.token !== this.token) return;
        if (message.run !== this.runId) {
          // The kernel sends one `done` per run: an earlier run's here means that run's end was
          // forged (its real one follows). Nothing it ran can be trusted to have stopped.
          const error = {
            type: 'ForgedRunEnd',
            message: `The sandbox reported the end of an earlier run (${message.run}) during this one: code forged the end of that run and went on running`,
            traceback: '',
          };
          return this.finish('error', null, error, true, true);
        }
        if (this.stopping && message.leftoverThreads) {
          const threads = message.leftoverThreads === 1 ? '1 thread it started was' : `${message.leftoverThreads} threads it started were`;
          const error = this.stopError(message.error);
          this.finish(
            this.stopping,
            null,
            { ...error, message: `${error.message} ${threads} still running after the interrupt` },
            true,
            true,
          );
        } else if (message.status === 'interrupted' && this.stopping) {
          this.finish(this.stopping, null, this.stopError(message.error), false);
        } else if (message.status === 'interrupted') {
          // A run that finished on its own just as it was stopped keeps its real outcome.
          this.finish('error', null, message.error, false);
        } else {
          this.finish(message.status, message.value, message.error, false);
        }
        return;
      case 'ignored':
        if (message.run === this.runId) this.onIgnored();
        return;
      case 'ready':
        return;
    }
  }

  private readonly files: RunFile[] = [];
  private fileBytes = 0;

  /** Checked again here: the kernel shares its process with the code. */
  private addFile(message: { path: string; bytes: number; data?: string | undefined; skipped?: RunFile['skipped'] }): void {
    if (this.finished || this.files.length >= MAX_OUT_ENTRIES) return;
    const file: RunFile = { path: message.path, bytes: message.bytes };
    if (message.data !== undefined) {
      const bytes = base64Bytes(message.data);
      file.bytes = bytes;
      const kept = this.files.filter((f) => f.data !== undefined).length;
      if (bytes > MAX_OUT_FILE_BYTES) file.skipped = 'size';
      else if (kept >= MAX_OUT_FILES) file.skipped = 'count';
      else if (this.fileBytes + bytes > MAX_OUT_TOTAL_BYTES) file.skipped = 'total';
      else {
        file.data = message.data;
        this.fileBytes += bytes;
      }
    } else {
      file.skipped = message.skipped ?? 'size';
    }
    this.files.push(file);
  }

  private addImage(mime: string, data: string): void {
    if (this.finished || this.images.length >= MAX_IMAGES_PER_RUN || data.length > MAX_IMAGE_BASE64_CHARS) {
      this.omittedImages++;
    } else {
      this.images.push({ mime, data });
    }
  }

  private async onRequest(id: number, method: string, params: unknown): Promise<void> {
    const reply = (ok: boolean, payload: unknown) => {
      // A restarted interpreter numbers its requests from 1 again: it must not get old answers.
      if (this.container.generation !== this.generation) return;
      const message = ok
        ? ({ t: 'res', id, ok: true, result: payload } as const)
        : ({ t: 'res', id, ok: false, error: payload as { type: string; kind: ErrorKind; message: string; details?: object } } as const);
      this.container.send(message);
    };
    if (this.stopping || !this.options.onRequest) {
      return reply(false, {
        type: 'HostError',
        kind: 'failed',
        message: this.stopping ? 'the run is stopping' : `no host method "${method}"`,
      });
    }
    if (this.inFlight >= MAX_REQUESTS_IN_FLIGHT) {
      return reply(false, {
        type: 'HostError',
        kind: 'too-large',
        message: `too many requests in flight (limit ${MAX_REQUESTS_IN_FLIGHT})`,
      });
    }
    this.requests++;
    this.inFlight++;
    this.waits.set(id, { what: method, since: performance.now() });
    try {
      const result = await this.options.onRequest(method, params, {
        runId: this.runId,
        session: this.session,
        signal: (this.requestsAbort ??= new AbortController()).signal,
        emitImage: (mime, data) => this.addImage(mime, data),
        untimed: (work) => this.clock.untimed(work),
        describe: (what) => {
          const wait = this.waits.get(id);
          if (wait) wait.what = what;
        },
      });
      reply(true, result ?? null);
    } catch (error) {
      // `hostDetails`: what an error carries for the sandbox besides its message (a JSON-RPC code and data).
      const details = error instanceof Error ? (error as { hostDetails?: unknown }).hostDetails : undefined;
      reply(false, {
        type: error instanceof Error ? error.name : 'HostError',
        kind: kindOf(error),
        message: error instanceof Error ? error.message : String(error),
        ...(details && typeof details === 'object' ? { details } : {}),
      });
    } finally {
      this.inFlight--;
      this.waits.delete(id);
    }
  }

  /** Timeout or cancel: interrupt, then ask for a restart if the code does not stop in time. */
  private stop(why: 'timeout' | 'cancelled'): void {
    if (this.stopping) return;
    this.stopping = why;
    this.clock.stop();
    const now = performance.now();
    this.waitingAtStop = [...this.waits.values()].map((w) => `${w.what} (${((now - w.since) / 1000).toFixed(1)} s)`);
    this.requestsAbort?.abort();
    this.container.send({ t: 'interrupt', run: this.runId });
    this.giveUpAfter(this.config.interruptGraceSeconds * 1000, `It did not stop within ${this.config.interruptGraceSeconds} s`);
  }

  /** Ends the stopped run after `ms` unless it ends first; its interpreter is then restarted. */
  private giveUpAfter(ms: number, words: string): void {
    const stopping = this.stopping;
    if (!stopping) return;
    this.timers.push(
      setTimeout(() => {
        const error = this.stopError(null);
        this.finish(stopping, null, { ...error, message: `${error.message} ${words}` }, true, true);
      }, ms),
    );
  }

  /** The kernel saw the code catch its interrupt and go on: it gets a moment to end, not the whole grace. */
  private onIgnored(): void {
    if (!this.stopping || this.ignored) return;
    this.ignored = true;
    if (IGNORED_GRACE_MS < this.config.interruptGraceSeconds * 1000) this.giveUpAfter(IGNORED_GRACE_MS, 'It went on after the interrupt');
  }

  private stopError(kernelError: KernelError | null): KernelError {
    const uncounted =
      this.clock.untimedMs >= 100 ? ` (not counting ${(this.clock.untimedMs / 1000).toFixed(1)} s spent waiting for servers to start)` : '';
    const message =
      this.stopping === 'timeout'
        ? `The code did not finish within ${Math.round(this.options.timeoutMs / 100) / 10} s${uncounted} and was interrupted${this.waitingText()}.`
        : `The run was cancelled and interrupted${this.waitingText()}.`;
    return { type: this.stopping === 'timeout' ? 'Timeout' : 'Cancelled', message, traceback: kernelError?.traceback ?? '' };
  }

  private onExit(info: ExitInfo): void {
    let error: KernelError;
    const how = `exit code ${info.code ?? 'none'}${info.reason ? `: ${info.reason}` : ''}`;
    if (this.stopping) {
      error = {
        type: this.stopping === 'timeout' ? 'Timeout' : 'Cancelled',
        message: `${this.stopError(null).message} Its sandbox ended before the code stopped (${how}); the session's state is lost.`,
        traceback: '',
      };
    } else if (info.code === 137 && !info.killedByHost) {
      error = {
        type: 'OutOfMemory',
        message: `The sandbox was killed (SIGKILL), most likely for exceeding its memory limit of ${this.config.memory}; the session's state is lost.`,
        traceback: '',
      };
    } else {
      error = {
        type: 'SandboxExited',
        message: `The sandbox ended during the run (${how}); the session's state is lost.`,
        traceback: '',
      };
    }
    this.finish(this.stopping ?? 'error', null, error, true);
  }

  /** " while waiting for memory.read_graph (12.1 s)", when requests were in flight at the stop. */
  private waitingText(): string {
    const waits = this.waitingAtStop;
    if (waits.length === 0) return '';
    const shown = waits.slice(0, 3).join(', ');
    return ` while waiting for ${shown}${waits.length > 3 ? ` and ${waits.length - 3} more` : ''}`;
  }

  private finished = false;

  private finish(status: RunStatus, value: string | null, error: KernelError | null, lost: boolean, restart = false): void {
    if (this.finished) return;
    this.finished = true;
    this.clock.stop();
    for (const timer of this.timers) clearTimeout(timer);
    this.requestsAbort?.abort();
    // Watched from here on, unless the interpreter is about to be replaced (frames of the old one
    // may still come) or is gone: the session watches again after a restart.
    if (lost || restart || !this.onForgedEnd) this.container.on({});
    else watchBetweenRuns(this.container, this.runId, this.options.onRefusedRequest, this.onForgedEnd);
    const omitted = { stdout: this.stdout.omitted, stderr: this.stderr.omitted, images: this.omittedImages };
    const result: RunResult = {
      runId: this.runId,
      session: this.session,
      status,
      stdout: this.stdout.toString(),
      stderr: this.stderr.toString(),
      value,
      error,
      images: this.images,
      ...(this.files.length > 0 ? { files: this.files } : {}),
      durationMs: performance.now() - this.started,
      omitted,
      truncated: omitted.stdout > 0 || omitted.stderr > 0 || omitted.images > 0,
      sessionLost: lost,
      coldStart: this.cold,
      requests: this.requests,
    };
    this.settle({ result, restart });
  }
}

/**
 * A run's time limit, which can be paused while the host waits on the code's behalf: nested
 * and concurrent pauses count once, and at most `budgetMs` in all goes uncounted.
 */
export class RunClock {
  /** Time paused so far (not counted against the limit). */
  untimedMs = 0;
  private leftMs: number;
  private budgetMs: number;
  private since: number;
  private timer: ClockTimer | undefined;
  /** Waits in progress; the clock stands still while there is one. */
  private pauses = 0;
  private stopped = false;
  private readonly onTimeout: () => void;
  /** The time and timers read (tests drive them). */
  private readonly clock: Clock;

  constructor(limitMs: number, onTimeout: () => void, budgetMs = MAX_UNTIMED_MS, clock: Clock = realClock) {
    this.leftMs = limitMs;
    this.budgetMs = budgetMs;
    this.onTimeout = onTimeout;
    this.clock = clock;
    this.since = clock.now();
    this.arm();
  }

  async untimed<T>(work: Promise<T>): Promise<T> {
    if (this.stopped) return work;
    if (this.pauses === 0) this.book();
    this.pauses++;
    if (this.pauses === 1) this.arm();
    try {
      return await work;
    } finally {
      this.book();
      this.pauses--;
      if (!this.stopped) this.arm();
    }
  }

  stop(): void {
    this.stopped = true;
    this.clock.clearTimeout(this.timer);
  }

  /** Books the time since the last booking: counted, or uncounted while paused (up to the budget). */
  private book(): void {
    const now = this.clock.now();
    const elapsed = now - this.since;
    this.since = now;
    const free = this.pauses > 0 ? Math.min(elapsed, this.budgetMs) : 0;
    this.budgetMs -= free;
    this.untimedMs += free;
    this.leftMs = Math.max(0, this.leftMs - (elapsed - free));
  }

  /** While paused the clock stands still until the budget is spent, then runs again. */
  private arm(): void {
    this.clock.clearTimeout(this.timer);
    const ms = this.pauses > 0 ? this.leftMs + this.budgetMs : this.leftMs;
    this.timer = this.clock.setTimeout(() => {
      this.stopped = true;
      this.onTimeout();
    }, ms);
  }
}

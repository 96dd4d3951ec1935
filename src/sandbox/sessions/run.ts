// One run on a kernel container, from `exec` to `done` (or to the container's end): output,
// images, requests to the host, the time limit, and the stop (interrupt, then a restart of the
// interpreter when the code does not stop). Sessions (session.ts) queue runs and act on the
// restart a run asks for.
import { randomUUID } from 'node:crypto';
import type { SandboxConfig } from '../../config/schema.ts';
import type { ExitInfo, Kernel } from '../protocol/kernel-process.ts';
import { CappedText } from './capped-text.ts';
import type { KernelError, KernelMessage } from '../protocol/messages.ts';
import { kindOf, type ErrorKind } from '../../shared/error-kinds.ts';
import { base64Bytes } from '../../shared/byte-size.ts';
import {
  MAX_IMAGE_BASE64_CHARS,
  MAX_IMAGES_PER_RUN,
  MAX_OUT_ENTRIES,
  MAX_OUT_FILE_BYTES,
  MAX_OUT_FILES,
  MAX_OUT_TOTAL_BYTES,
  type RunFile,
  type RunImage,
  type RunResult,
  type RunStatus,
} from './run-result.ts';
import { MAX_REQUESTS_IN_FLIGHT, REFRESH_WORKSPACE, refuseRequest, watchBetweenRuns } from './run-requests.ts';
import type { RunOptions, RunSpec, TrackedRun } from './run-spec.ts';
import { RunClock } from './run-clock.ts';
import type { EgressHandler } from '../egress/types.ts';

/**
 * What is left of the grace once the kernel saw the code catch its interrupt and go on (or
 * ignore SIGINT): code that ends right after catching it still ends on its own.
 */
/** Said after a clean stop (a timeout or a cancel the code obeyed): the session is as it was. */
export const STATE_KEPT = "The session's state (variables, imports) is kept.";

export const IGNORED_GRACE_MS = 250;

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
    else {
      // Requests through the container's proxy are this run's until it finishes (finish: endRun).
      container.egress?.beginRun(runId, this.untimedAsks(options.egress), (this.requestsAbort ??= new AbortController()).signal);
      container.send({ t: 'exec', run: runId, code, token: this.token });
    }
  }

  /** The run's egress handler, whose questions to the user do not count against the run's time. */
  private untimedAsks(handler: EgressHandler | undefined): EgressHandler | undefined {
    if (!handler) return undefined;
    return {
      ask: (target, context) => this.clock.untimed(handler.ask(target, context)),
      record: (entry) => handler.record(entry),
    };
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
        this.onDone(message);
        return;
      case 'ignored':
        if (message.run === this.runId) this.onIgnored();
        return;
      case 'ready':
        return;
    }
  }

  /** The run's end from the kernel, or a forged end of an earlier run. */
  private onDone(message: Extract<KernelMessage, { t: 'done' }>): void {
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
      this.finish(this.stopping, null, { ...error, message: `${error.message} ${threads} still running after the interrupt` }, true, true);
    } else if (message.status === 'interrupted' && this.stopping) {
      // Stopped cleanly: the model should know it need not set anything up again.
      const error = this.stopError(message.error);
      this.finish(this.stopping, null, { ...error, message: `${error.message} ${STATE_KEPT}` }, false);
    } else if (message.status === 'interrupted') {
      // A run that finished on its own just as it was stopped keeps its real outcome.
      this.finish('error', null, message.error, false);
    } else {
      this.finish(message.status, message.value, message.error, false);
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

  /** refresh_workspace(): the container copies the workspace in again; a kernel without one says so. */
  private async refreshWorkspace(): Promise<unknown> {
    if (!this.container.refreshWorkspace) {
      throw Object.assign(new Error('There is no workspace folder in this sandbox (a container sandbox has one).'), {
        kind: 'unavailable',
      });
    }
    return this.container.refreshWorkspace();
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
    // The sandbox's own request, not the handler's: the container sends the snapshot, then the answer.
    if (method === REFRESH_WORKSPACE && !this.stopping) {
      this.requests++;
      return this.refreshWorkspace().then(
        (result) => reply(true, result ?? null),
        (error: Error) => reply(false, { type: error.name, kind: kindOf(error), message: error.message }),
      );
    }
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
    this.container.egress?.endRun();
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

// A named session: one warm container whose interpreter keeps its globals between runs.
// Runs execute one at a time. A timeout or cancel interrupts the code (KeyboardInterrupt); if
// it does not stop within the grace period, or leaves threads running, the interpreter is
// restarted in place (the session's state is lost, its container kept); a container whose
// interpreter does not restart in time is killed, and the next run starts a fresh one.
// `reset` uses the same restart.
import { randomUUID } from 'node:crypto';
import type { SandboxConfig } from '../../config/schema.ts';
import type { Kernel } from '../protocol/kernel-process.ts';
import { SandboxStartError } from '../errors.ts';
import { runOnContainer } from './run.ts';
import type { RunResult, RunStatus, SessionChange } from './run-result.ts';
import { watchBetweenRuns } from './run-requests.ts';
import type { RunOptions } from './run-spec.ts';

let useCounter = 0;

/**
 * The code every new interpreter runs first and, once it has changed (the bridge's servers
 * changed), the code an interpreter that ran an older one runs before its next run, keeping
 * its variables.
 */
export interface Prelude {
  code: string;
  update?: string;
}

/** The prelude each live interpreter ran (or caught up with), by its kernel. */
const ranPrelude = new WeakMap<Kernel, string>();

export class Session {
  private container: Kernel | undefined;
  private starting: Promise<Kernel> | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private busyCount = 0;
  lastUsed = Date.now();
  /** Order of last use among all sessions (Date.now() ties within a millisecond). */
  useOrder = ++useCounter;
  runs = 0;
  /** Closed sessions refuse work, and a container that finishes starting after the close is stopped. */
  private closed = false;
  /** A loss of state the next run's result says (its own result did not, or could not). */
  private pendingChange: SessionChange | undefined;
  /** The container was alive when the last run ended: if it is gone at the next, it died in between. */
  private aliveAfterRun = false;
  /** A `done` came while no run was in progress: the run before forged its end (its code may still run). */
  private forgedEnd: string | undefined;

  readonly name: string;
  private readonly start: StartKernel;
  private readonly config: SandboxConfig;

  private readonly prelude: () => Prelude | undefined;
  private readonly takeSpare: (() => Promise<Kernel | undefined>) | undefined;
  private readonly onStarted: ((container: Kernel) => void) | undefined;

  /**
   * `prelude` (read at each start and run) runs in every new interpreter of this session before its first run;
   * `takeSpare` hands over a pre-started container (with the prelude run), if there is one;
   * `change` is why an earlier session of this name is gone (reaped, evicted), for its first run to say;
   * `onStarted` is told of each container this session starts itself (before its first run).
   */
  constructor(
    name: string,
    start: StartKernel,
    config: SandboxConfig,
    prelude: () => Prelude | undefined = () => undefined,
    takeSpare?: () => Promise<Kernel | undefined>,
    change?: SessionChange,
    onStarted?: (container: Kernel) => void,
  ) {
    this.name = name;
    this.onStarted = onStarted;
    this.pendingChange = change;
    this.start = start;
    this.prelude = prelude;
    this.takeSpare = takeSpare;
    this.config = config;
  }

  get busy(): boolean {
    return this.busyCount > 0;
  }

  get alive(): boolean {
    return this.container?.alive ?? false;
  }

  get containerName(): string | undefined {
    return this.container?.name;
  }

  /** Queues a run behind the session's earlier runs. */
  execute(code: string, options: RunOptions, reset = false): Promise<RunResult> {
    this.busyCount++;
    const run = this.queue.then(async () => {
      try {
        if (this.closed) throw new SandboxStartError(`Session "${this.name}" was closed; run the code again to start a new one.`);
        if (reset) {
          // A reset of a session that had no state yet changes nothing worth saying.
          if (this.runs > 0) this.pendingChange ??= { kind: 'reset', reason: 'asked for with reset: true' };
          // A remote engine's workspace snapshot is taken again: the reset sees the files as they are now.
          if (await this.restartInterpreter()) await this.container?.renewWorkspace?.();
        }
        return await this.runNow(code, options);
      } finally {
        this.busyCount--;
        this.lastUsed = Date.now();
        this.useOrder = ++useCounter;
      }
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    this.closed = true;
    const container = this.container ?? (await this.starting?.catch(() => undefined));
    this.container = undefined;
    await container?.close();
  }

  /** Synchronous names for last-chance clean-up at process exit. */
  liveContainerName(): string | undefined {
    return this.container?.alive ? this.container.name : undefined;
  }

  /** A fresh interpreter in the session's container; false when the container had to go. */
  private async restartInterpreter(): Promise<boolean> {
    const container = this.container;
    if (!container?.alive) return false;
    return restartKernel(container, this.config, this.name, this.prelude()?.code);
  }

  private async ensureContainer(): Promise<{ container: Kernel; cold: boolean }> {
    if (this.container?.alive) return { container: this.container, cold: false };
    // A pre-started spare (never used by anyone) makes the first run of a session warm.
    const spare = await this.takeSpare?.();
    if (spare?.alive) return { container: this.adopt(spare), cold: false };
    this.starting ??= startKernel(this.start, this.config, this.name, this.prelude()?.code);
    try {
      const started = this.adopt(await this.starting);
      this.onStarted?.(started);
      return { container: started, cold: true };
    } finally {
      this.starting = undefined;
    }
  }

  /** Keeps a container that finished starting, unless the session was closed meanwhile. */
  private adopt(container: Kernel): Kernel {
    if (this.closed) {
      void container.close();
      throw new SandboxStartError(`Session "${this.name}" was closed while its sandbox started.`);
    }
    this.container = container;
    return container;
  }

  private async runNow(code: string, options: RunOptions): Promise<RunResult> {
    const started = performance.now();
    const runId = options.runId ?? randomUUID();
    if (options.signal?.aborted) return this.emptyResult(runId, 'cancelled', started, 'Cancelled before it started.');
    const ended = this.aliveAfterRun && !this.alive ? this.container?.exitStatus : undefined;
    const { container, cold } = await this.ensureContainer();
    if (ended) {
      const how = `exit code ${ended.code ?? 'none'}${ended.reason ? `: ${ended.reason}` : ''}`;
      this.pendingChange ??= { kind: 'lost', reason: `its sandbox ended after the last run (${how})` };
    }
    if (this.forgedEnd !== undefined) {
      const forged = this.forgedEnd;
      this.forgedEnd = undefined;
      const restarted = await this.restartInterpreter();
      this.pendingChange = {
        kind: 'lost',
        reason: `code of an earlier run (${forged}) forged the end of its run and went on running, so the interpreter was ${restarted ? 'restarted' : 'stopped'}`,
      };
      if (!restarted) return this.runNow(code, { ...options, runId });
    }
    await this.catchUp(container);
    const change = this.pendingChange;
    this.pendingChange = undefined;
    this.runs++;
    const onForgedEnd = (run: string) => (this.forgedEnd ??= run);
    const { result, restart } = await runOnContainer({
      container,
      runId,
      session: this.name,
      config: this.config,
      options,
      cold,
      started,
      code,
      onForgedEnd,
    });
    if (restart && result.error) {
      const restarted = await this.restartInterpreter();
      result.error.message += restarted
        ? ", so its interpreter was restarted; the session's state is lost."
        : ", and its interpreter did not restart either, so its sandbox was killed; the session's state is lost.";
      result.durationMs = performance.now() - started;
      if (restarted) watchBetweenRuns(container, runId, options.onRefusedRequest, onForgedEnd);
    }
    // A cancelled run's result never reaches the caller (MCP drops it): the next run says the loss.
    if (result.status === 'cancelled' && result.sessionLost) {
      this.pendingChange = { kind: 'lost', reason: 'the run before this one was cancelled and its interpreter had to be restarted' };
    }
    this.aliveAfterRun = this.alive;
    if (change) result.sessionChange = change;
    const notice = container.takeNotice?.();
    if (notice) result.stderr = `[sandbox] ${notice}\n${result.stderr}`;
    return result;
  }

  /** An interpreter that ran an older prelude runs its update first (a failure leaves it as it was). */
  private async catchUp(container: Kernel): Promise<void> {
    const now = this.prelude();
    const ran = ranPrelude.get(container);
    // An interpreter that ran no prelude has no runtime to update.
    if (!now?.update || ran === undefined || ran === now.code) return;
    await runPrelude(container, this.config, this.name, now.update, now.code);
  }

  private emptyResult(runId: string, status: RunStatus, started: number, message: string): RunResult {
    return {
      runId,
      session: this.name,
      status,
      stdout: '',
      stderr: '',
      value: null,
      error: { type: status === 'cancelled' ? 'Cancelled' : 'Error', message, traceback: '' },
      images: [],
      durationMs: performance.now() - started,
      omitted: { stdout: 0, stderr: 0, images: 0 },
      truncated: false,
      sessionLost: false,
      coldStart: false,
      requests: 0,
    };
  }
}

/** How a kind of sandbox starts a kernel for a session (resolves once it is ready). */
export type StartKernel = (session: string) => Promise<Kernel>;

/** Starts a kernel and runs the prelude in it; a failing prelude is a start failure. */
export async function startKernel<K extends Kernel>(
  start: (session: string) => Promise<K>,
  config: SandboxConfig,
  session: string,
  prelude?: string,
): Promise<K> {
  const container = await start(session);
  const failure = await runPrelude(container, config, session, prelude);
  if (failure) {
    await container.kill('prelude failed');
    throw new SandboxStartError(failure);
  }
  return container;
}

/**
 * Replaces the container's interpreter with a fresh one and runs the prelude in it (about as
 * long as a Python start); kills the container and resolves false when either fails.
 */
export async function restartKernel(container: Kernel, config: SandboxConfig, session: string, prelude?: string): Promise<boolean> {
  if (!(await container.restart())) return false;
  if (!(await runPrelude(container, config, session, prelude))) return true;
  await container.kill('prelude failed after a restart');
  return false;
}

/** Runs the prelude in a new interpreter (`becomes`: the prelude it then has); the failure in words, or undefined. */
async function runPrelude(
  container: Kernel,
  config: SandboxConfig,
  session: string,
  prelude?: string,
  becomes = prelude,
): Promise<string | undefined> {
  if (prelude === undefined) return undefined;
  const { result } = await runOnContainer({
    container,
    runId: `prelude-${randomUUID()}`,
    session,
    config,
    options: { timeoutMs: 30_000 },
    cold: true,
    started: performance.now(),
    code: prelude,
  });
  if (result.status === 'ok') {
    if (becomes !== undefined) ranPrelude.set(container, becomes);
    return undefined;
  }
  return `The sandbox's runtime failed to load: ${result.error?.type}: ${result.error?.message}\n${result.error?.traceback ?? ''}`;
}

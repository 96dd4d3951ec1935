// The pool of named sessions: one warm container each, created on first use, reaped after
// an idle time, capped in number. Also the lazy, cached choice of runtime and image check.
import type { SandboxConfig } from '../../config/schema.ts';
import { removeNow, removeOrphans } from '../container/cleanup.ts';
import { ImageMissingError, RuntimeUnavailableError, SessionLimitError } from '../errors.ts';
import { pullImage } from '../image/image.ts';
import {
  firstStartGuess,
  firstStartOwnNamespace,
  guessConfirmed,
  noNetworkText,
  selectRuntime,
  startProven,
  type DetectOptions,
  type RuntimeStatus,
} from '../engines/detect.ts';
import { isGvisor } from '../engines/oci-runtime.ts';
import { packagesState, type PackagesState } from '../image/derived.ts';
import { KernelContainer, type RuntimeRef } from '../container/kernel-container.ts';
import type { StartEgressProxy } from '../container/egress-link.ts';
import { networkEnabled, removeOwnSocketDirsNow } from '../egress/socket-dir.ts';
import { proxyOutOfReach, type ProxyOutOfReach } from '../engines/vm.ts';
import type { Kernel } from '../protocol/kernel-process.ts';
import { imageKey, LearnedImages, type ImageDistributions } from '../image/distributions.ts';
import { Session, startKernel, type Prelude, type StartKernel } from './session.ts';
import type { RunResult, SessionChange } from './run-result.ts';
import type { RefusedRequest, RequestHandler } from './run-requests.ts';
import type { Sandbox, SandboxEngine, SandboxTier } from '../sandbox.ts';
import type { EgressHandler } from '../egress/types.ts';
import { startEgressProxy } from '../egress/start.ts';
import { WASM_IMAGE_KEY, WasmKernel } from '../wasm/wasm-kernel.ts';

export interface ExecuteOptions {
  runId?: string;
  session?: string;
  /** Defaults to the configured timeoutSeconds; callers validate against the maximum. */
  timeoutMs?: number;
  reset?: boolean;
  signal?: AbortSignal;
  onOutput?: (stream: 'stdout' | 'stderr', text: string) => void;
  /** Serves this run's requests (tool calls); the manager's onRequest when not given. */
  onRequest?: RequestHandler;
  /** Asks about and records this run's requests through the network proxy (sandbox.network). */
  egress?: EgressHandler;
}

export interface SessionInfo {
  name: string;
  busy: boolean;
  alive: boolean;
  runs: number;
  lastUsed: number;
  container?: string;
}

export interface SessionManagerOptions {
  detect?: DetectOptions;
  /** Serves requests (tool calls) from sandboxed code. */
  onRequest?: RequestHandler;
  /** Told of requests refused because their run had ended (run.ts refuseRequest). */
  onRefusedRequest?: (refused: RefusedRequest) => void;
  /** Code every new interpreter runs first (the MCP runtime). */
  prelude?: string;
  /** How the user pulls a missing image where this runs (a VS Code command, a CLI flag). */
  pullHint?: string;
  /** Progress of a pull started because `pull` is "missing". */
  onPullProgress?: (line: string) => void;
  /** Told when a look again finds the packages image built (runs use it from the next session on). */
  onPackagesBuilt?: (state: PackagesState) => void;
  /** Told once, when the sandbox runs use is chosen (sandbox.backend). */
  onEngine?: (engine: SandboxEngine) => void;
  /** Told once per image of the distributions its first container reported (`derived`: the sandbox.packages image). */
  onImageDistributions?: (image: string, found: ImageDistributions, derived: boolean) => void;
  /** Starts each container's egress proxy when sandbox.network lets something through (default: the real proxy, egress/proxy.ts). */
  egressProxy?: StartEgressProxy;
}

/** How often a run (or recheckPackages) looks again for a packages image that was missing. */
export const PACKAGES_RECHECK_MS = 5_000;

export const SESSION_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** Names of closed sessions remembered, with why they closed, for their next run to say. */
const MAX_RETIRED = 1000;

/** "10 min", "45 s", "2 h": a configured time as a person says it. */
export function spokenSeconds(seconds: number): string {
  if (seconds >= 3600 && seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds >= 60 && seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

export class SessionManager implements Sandbox {
  private runtimePromise: Promise<RuntimeStatus> | undefined;
  /** The engine once chosen: a run never moves between kinds of sandbox. */
  private enginePromise: Promise<SandboxEngine> | undefined;
  private engine: SandboxEngine | undefined;
  private orphanSweep: Promise<number> | undefined;
  private readonly sessions = new Map<string, Session>();
  private readonly idleTimers = new Map<string, NodeJS.Timeout>();
  /** Sessions closed by the manager (reaped, evicted): a run under the same name is told. */
  private readonly retired = new Map<string, SessionChange>();
  private closed = false;
  /** The runtime once known, for synchronous clean-up at exit. */
  private runtimeRef: RuntimeStatus | undefined;
  private spare: Promise<Kernel> | undefined;
  private spareName: string | undefined;
  private spareIdle: NodeJS.Timeout | undefined;
  private readonly dropped = new WeakSet<Promise<Kernel>>();
  /** The first check's container (it proved the hardened start), until a spare or a session takes it. */
  private proven: KernelContainer | undefined;
  private provenIdle: NodeJS.Timeout | undefined;
  /** Set by the first prewarm(): from then on each spare taken is replaced. */
  private prewarming = false;
  private readonly exitHandler = () => this.removeAllNow();
  /** Each image's distributions, by image key, learned from its first container. */
  private readonly learned = new LearnedImages();
  /** Containers whose report was read: the first check's is read under the checked image's key, then again as a spare. */
  private readonly reported = new WeakSet<Kernel>();

  readonly config: SandboxConfig;
  private readonly options: SessionManagerOptions;
  /** The code new interpreters run first (options.prelude, until setPrelude). */
  private prelude: Prelude | undefined;

  constructor(config: SandboxConfig, options: SessionManagerOptions = {}) {
    this.config = config;
    this.options = options;
    this.prelude = options.prelude === undefined ? undefined : { code: options.prelude };
    process.once('exit', this.exitHandler);
  }

  /**
   * The sandbox runs use, chosen once by sandbox.backend: "container" checks the runtimes
   * (installed, answering, image present, a hardened container starts) and rejects with
   * RuntimeUnavailableError or ImageMissingError; "wasm" needs nothing more; "auto" takes a
   * container when one can run, else WebAssembly (saying why).
   */
  check(): Promise<SandboxEngine> {
    this.enginePromise ??= this.chooseEngine();
    // A failed check is retried next time (the user may have started the daemon).
    this.enginePromise.catch(() => (this.enginePromise = undefined));
    return this.enginePromise.then(async (engine) => {
      const next: SandboxEngine = engine.kind === 'container' ? { kind: 'container', runtime: await this.checkRuntime() } : engine;
      const first = !this.engine;
      this.engine = next;
      if (next.kind === 'container') this.runtimeRef = next.runtime;
      if (first) this.options.onEngine?.(next);
      return next;
    });
  }

  private async chooseEngine(): Promise<SandboxEngine> {
    const backend = this.config.backend;
    if (backend === 'wasm') return { kind: 'wasm' };
    try {
      return { kind: 'container', runtime: await this.checkRuntime() };
    } catch (error) {
      if (backend === 'container' || !(error instanceof RuntimeUnavailableError || error instanceof ImageMissingError)) throw error;
      return { kind: 'wasm', whyNotContainer: error.message };
    }
  }

  /** The container runtime in use; checked once, on first need (a failure is checked again next time). */
  private checkRuntime(): Promise<RuntimeStatus> {
    this.runtimePromise ??= this.selectRuntime();
    this.runtimePromise.catch(() => (this.runtimePromise = undefined));
    return this.runtimePromise.then((status) => this.withBuiltPackages(status));
  }

  private packagesCheckedAt = 0;

  /**
   * The packages image built while this bridge runs is used from the next new container on:
   * while it is missing, looked for again (two CLI calls) at most every PACKAGES_RECHECK_MS.
   */
  private async withBuiltPackages(status: RuntimeStatus): Promise<RuntimeStatus> {
    if (status.packages?.state !== 'missing' || Date.now() - this.packagesCheckedAt < PACKAGES_RECHECK_MS) return status;
    this.packagesCheckedAt = Date.now();
    const state = await packagesState(status.command, this.config, this.options.detect?.env ? { env: this.options.detect.env } : {}).catch(
      () => undefined,
    );
    if (state?.state !== 'built') return status;
    const next: RuntimeStatus = { ...status, image: state.tag, packages: state };
    if (this.runtimePromise) this.runtimePromise = Promise.resolve(next);
    this.options.onPackagesBuilt?.(state);
    return next;
  }

  /**
   * Looks again for a packages image that was missing, without a run (a bridge calls it
   * periodically, so that its listing can say so); nothing before the runtime is known.
   */
  async recheckPackages(): Promise<PackagesState | undefined> {
    const known = this.runtimeRef;
    if (!known || this.closed) return known?.packages;
    const next = await this.withBuiltPackages(known);
    if (this.runtimeRef === known) this.runtimeRef = next;
    return next.packages;
  }

  private async selectRuntime(): Promise<RuntimeStatus> {
    try {
      return await this.selectAndStart();
    } catch (error) {
      if (!(error instanceof ImageMissingError) || this.config.pull !== 'missing') throw error;
      // The user asked for pulls on first use: this is that first use.
      await pullImage(this.config, this.options.onPullProgress ?? (() => {}), this.options.detect ? { detect: this.options.detect } : {});
      return selectRuntime(this.config, this.options.detect, this.options.pullHint);
    }
  }

  /**
   * The checks without their one-shot container: the first sandbox, started at once with the
   * same hardening, proves the start and becomes the first spare (one container start less
   * before the first run). When it does not start, the checks run again with their own
   * container, which explains the failure, or picks another runtime, as always.
   */
  private async selectAndStart(): Promise<RuntimeStatus> {
    // Where the checks can only confirm or refuse it, the sandbox starts beside them (the
    // runtime's `info` alone can take longer than a container start); it serves only once they
    // passed and agree, else it is closed. It runs nothing but the kernel until then.
    const guess = firstStartGuess(this.config, this.options.detect);
    const early = guess ? startKernel(this.containerStarter(guess), this.config, 'spare', this.prelude?.code).catch(() => null) : undefined;
    let status: RuntimeStatus;
    try {
      // podman's `info` may be the answer kept from an earlier start: the first container proves
      // the engine answers, and when it does not start, the checks below ask podman again.
      status = await selectRuntime(this.config, { ...this.options.detect, skipStart: true, cachedInfo: true }, this.options.pullHint);
    } catch (error) {
      void early?.then((container) => container?.close());
      throw error;
    }
    const own = firstStartOwnNamespace(status);
    let container = await early;
    // Started with the network's socket on an engine the checks found in a VM, where it cannot work.
    const socketUseless = container?.egress !== undefined && proxyOutOfReach(status, this.options.detect?.env ?? process.env) !== undefined;
    const confirmed = guess !== undefined && guessConfirmed(guess, status) && !socketUseless;
    if (container && !confirmed) void container.close();
    // The start the checks would make failed already: they explain it (or pick another runtime).
    if (container === null && confirmed) return selectRuntime(this.config, this.options.detect, this.options.pullHint);
    if (!container || !confirmed) {
      try {
        container = await startKernel(
          this.containerStarter({ ...status, ownUserNamespace: own }),
          this.config,
          'spare',
          this.prelude?.code,
        );
      } catch {
        return selectRuntime(this.config, this.options.detect, this.options.pullHint);
      }
    }
    startProven(status, container.pythonVersion, own);
    if (this.closed) {
      void container.close();
      return status;
    }
    // Known before what the container reported is told: the listing asks for it by this runtime.
    this.runtimeRef = status;
    this.learn(container, imageKey(status, this.config.image));
    this.proven = container;
    this.provenIdle = setTimeout(() => void this.takeProven()?.close(), this.config.idleSeconds * 1000);
    this.provenIdle.unref();
    return status;
  }

  private takeProven(): KernelContainer | undefined {
    const container = this.proven;
    this.proven = undefined;
    clearTimeout(this.provenIdle);
    return container?.alive ? container : undefined;
  }

  async execute(code: string, options: ExecuteOptions = {}): Promise<RunResult> {
    if (this.closed) throw new Error('The sandbox is shutting down.');
    const name = options.session ?? 'default';
    if (!SESSION_NAME.test(name)) {
      throw new RangeError('session must be 1-64 characters of letters, digits, "_", "-" or "."');
    }
    const engine = await this.check();
    if (engine.kind === 'container') this.orphanSweep ??= removeOrphans(engine.runtime).catch(() => 0);
    if (this.closed) throw new Error('The sandbox is shutting down.');
    // From here to session.execute() nothing awaits: the slot is taken (the session is busy)
    // before any other run can look, so maxSessions holds under any concurrency.
    const session = this.claimSession(name, engine);
    this.clearIdle(name);
    const run = session.execute(
      code,
      {
        timeoutMs: options.timeoutMs ?? this.config.timeoutSeconds * 1000,
        ...(options.runId ? { runId: options.runId } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.onOutput ? { onOutput: options.onOutput } : {}),
        ...(options.onRequest || this.options.onRequest ? { onRequest: options.onRequest ?? this.options.onRequest } : {}),
        ...(this.options.onRefusedRequest ? { onRefusedRequest: this.options.onRefusedRequest } : {}),
        ...(options.egress ? { egress: options.egress } : {}),
      },
      options.reset ?? false,
    );
    const notice = this.noNetworkNotice(engine);
    try {
      const result = await run;
      if (notice) result.stderr = `[sandbox] ${notice}\n${result.stderr}`;
      return result;
    } finally {
      if (!session.busy && this.sessions.get(name) === session) this.armIdle(name, session);
    }
  }

  private noNetworkSaid = false;

  /** Once per sandbox, when sandbox.network is set where it cannot apply (a remote engine, one in a VM, WebAssembly): why there is no network. */
  private noNetworkNotice(engine: SandboxEngine): string | undefined {
    if (this.noNetworkSaid || !networkEnabled(this.config)) return undefined;
    const outOfReach = this.outOfReach(engine);
    if (engine.kind === 'container' && !outOfReach) return undefined;
    this.noNetworkSaid = true;
    return noNetworkText(outOfReach && engine.kind === 'container' ? { ...outOfReach, runtime: engine.runtime.name } : 'wasm');
  }

  /** Why a container engine cannot reach the egress socket (remote, or in a VM), else undefined. */
  private outOfReach(engine: SandboxEngine): ProxyOutOfReach | undefined {
    return engine.kind === 'container' ? proxyOutOfReach(engine.runtime, this.options.detect?.env ?? process.env) : undefined;
  }

  /** The distributions of the image new sessions use, once a container of it started; undefined before. */
  imageDistributions(): ImageDistributions | undefined {
    if (this.engine?.kind === 'wasm') return this.learned.get(WASM_IMAGE_KEY);
    const runtime = this.runtimeRef;
    return runtime ? this.learned.get(imageKey(runtime, this.config.image)) : undefined;
  }

  /** Remembers what a fresh container reported, once per image: later containers change nothing. */
  private learn(container: Kernel, key = container.imageKey): void {
    if (this.reported.has(container)) return;
    this.reported.add(container);
    const found = container.distributions;
    if (!found || !this.learned.learn(key, found)) return;
    this.options.onImageDistributions?.(key, found, container.derivedImage !== undefined);
  }

  /** The runtime and isolation tier runs use (for the run log); undefined before the first run. */
  tier(): SandboxTier | undefined {
    if (this.engine?.kind === 'wasm') return { runtime: 'deno', isolation: 'wasm' };
    const runtime = this.runtimeRef;
    if (!runtime) return undefined;
    const oci = runtime.ociRuntime ?? runtime.defaultOciRuntime;
    return { runtime: runtime.name, isolation: isGvisor(runtime.ociRuntime) ? 'gVisor' : 'container', ...(oci ? { ociRuntime: oci } : {}) };
  }

  /** sandbox.packages as the last runtime check (or recheck) found them; undefined before any run. */
  packages(): PackagesState | undefined {
    return this.runtimeRef?.packages;
  }

  list(): SessionInfo[] {
    return [...this.sessions.values()].map((s) => ({
      name: s.name,
      busy: s.busy,
      alive: s.alive,
      runs: s.runs,
      lastUsed: s.lastUsed,
      ...(s.containerName ? { container: s.containerName } : {}),
    }));
  }

  setPrelude(code: string, update: string): void {
    // A spare started with the old prelude catches up on its first run, like a live session.
    this.prelude = { code, update };
  }

  markReset(names: readonly string[], change: SessionChange): void {
    for (const name of names) if (!this.sessions.has(name)) this.retire(name, change);
  }

  async closeSession(name: string): Promise<boolean> {
    const session = this.sessions.get(name);
    if (!session) return false;
    this.sessions.delete(name);
    this.clearIdle(name);
    await session.close();
    return true;
  }

  /** Stops every container. The manager accepts no runs afterwards. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...[...this.sessions.keys()].map((name) => this.closeSession(name)), this.dropSpare(), this.takeProven()?.close()]);
    process.removeListener('exit', this.exitHandler);
  }

  /**
   * Keeps one container started (prelude loaded) for the next new session, so that its first
   * run does not wait for a container start. Failures are quiet: the session starts its own.
   */
  prewarm(): Promise<void> {
    if (!this.config.prewarm || this.closed) return Promise.resolve();
    this.prewarming = true;
    if (this.spare)
      return this.spare.then(
        () => undefined,
        () => undefined,
      );
    const spare = (async () => {
      const engine = await this.check();
      // The first check's container, when it proved the start, is the first spare.
      return (
        (engine.kind === 'container' ? this.takeProven() : undefined) ??
        startKernel(this.starter(engine), this.config, 'spare', this.prelude?.code)
      );
    })();
    this.spare = spare;
    spare.then(
      (container) => {
        // Dropped (idle, shutdown) before it was up: close it. Taken: it is a session's now.
        if (this.closed || this.dropped.has(spare)) return void container.close();
        this.learn(container);
        if (this.spare !== spare) return;
        this.spareName = container.name;
        this.armSpareIdle();
      },
      () => {
        if (this.spare === spare) this.spare = undefined;
      },
    );
    return spare.then(
      () => undefined,
      () => undefined,
    );
  }

  private async takeSpare(engine: SandboxEngine): Promise<Kernel | undefined> {
    const spare = this.spare;
    this.spare = undefined;
    this.spareName = undefined;
    clearTimeout(this.spareIdle);
    const container = (await spare?.catch(() => undefined)) ?? this.takeProven();
    if (this.prewarming) setImmediate(() => void this.prewarm());
    // Started before the packages image was built: a new session gets a container of the new image.
    if (container && container.derivedImage !== this.runtimeRef?.image) {
      void container.close();
      return undefined;
    }
    // Started before sandbox.network was turned on: a new session gets a container with its way out.
    if (container && !container.egress && engine.kind === 'container' && networkEnabled(this.config) && !this.outOfReach(engine)) {
      void container.close();
      return undefined;
    }
    return container?.alive ? container : undefined;
  }

  private armSpareIdle(): void {
    clearTimeout(this.spareIdle);
    this.spareIdle = setTimeout(() => void this.dropSpare(), this.config.idleSeconds * 1000);
    this.spareIdle.unref();
  }

  private async dropSpare(): Promise<void> {
    const spare = this.spare;
    if (spare) this.dropped.add(spare);
    this.spare = undefined;
    this.spareName = undefined;
    clearTimeout(this.spareIdle);
    await (await spare?.catch(() => undefined))?.close();
  }

  /** The named session, or a new one in a free slot (closing the least recently used idle one). Synchronous. */
  private claimSession(name: string, engine: SandboxEngine): Session {
    const existing = this.sessions.get(name);
    if (existing) return existing;
    if (this.sessions.size >= this.config.maxSessions) {
      const victim = [...this.sessions.values()].filter((s) => !s.busy).sort((a, b) => a.useOrder - b.useOrder)[0];
      if (!victim) {
        throw new SessionLimitError(
          `All ${this.config.maxSessions} sandbox sessions are busy; wait for one to finish, reuse a session name, or raise sandbox.maxSessions.`,
        );
      }
      this.sessions.delete(victim.name);
      this.clearIdle(victim.name);
      this.retire(victim.name, {
        kind: 'evicted',
        reason: `closed to make room for session "${name}": at most ${this.config.maxSessions} sessions are kept (sandbox.maxSessions)`,
      });
      void victim.close();
    }
    const change = this.retired.get(name);
    this.retired.delete(name);
    const session = new Session(
      name,
      this.starter(engine),
      this.config,
      () => this.prelude,
      () => this.takeSpare(engine),
      change,
      (container) => this.learn(container),
    );
    this.sessions.set(name, session);
    return session;
  }

  /** How kernels of this engine start. */
  private starter(engine: SandboxEngine): StartKernel {
    if (engine.kind === 'wasm') return () => WasmKernel.start(this.config);
    return this.containerStarter(engine.runtime);
  }

  /** How containers of this runtime start. */
  private containerStarter(runtime: RuntimeRef): (session: string) => Promise<KernelContainer> {
    return (session) => KernelContainer.start(runtime, this.config, session, undefined, this.options.egressProxy ?? startEgressProxy);
  }

  private armIdle(name: string, session: Session): void {
    this.clearIdle(name);
    const timer = setTimeout(() => {
      if (this.sessions.get(name) !== session || session.busy) return;
      this.retire(name, { kind: 'reaped', reason: `closed after ${spokenSeconds(this.config.idleSeconds)} idle (sandbox.idleSeconds)` });
      void this.closeSession(name);
    }, this.config.idleSeconds * 1000);
    timer.unref();
    this.idleTimers.set(name, timer);
  }

  private retire(name: string, change: SessionChange): void {
    this.retired.delete(name);
    this.retired.set(name, change);
    if (this.retired.size > MAX_RETIRED) this.retired.delete(this.retired.keys().next().value!);
  }

  private clearIdle(name: string): void {
    const timer = this.idleTimers.get(name);
    if (timer) clearTimeout(timer);
    this.idleTimers.delete(name);
  }

  private removeAllNow(): void {
    const names = [...[...this.sessions.values()].map((s) => s.liveContainerName()), this.spareName, this.proven?.name].filter(
      (n): n is string => !!n,
    );
    if (this.runtimeRef) removeNow(this.runtimeRef, names);
    removeOwnSocketDirsNow();
  }
}

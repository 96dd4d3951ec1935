// A child process with a live kernel that speaks the frame protocol: feeds it its source over
// stdin, decodes and validates frames from stdout, restarts its interpreter in place, ends it.
// Every kind of sandbox runs its kernel in one (a container's `run -i` client, or a local
// process); the sessions layer sees only the `Kernel` interface. Knows nothing of runs.
import { tmpdir } from 'node:os';
import { execa, type ResultPromise } from 'execa';
import { ProtocolError, SandboxStartError } from '../errors.ts';
import { imageDistributions, type ImageDistributions } from '../image/distributions.ts';
import { checkFrameSize, encodeFrame, FrameDecoder, type FrameLimits } from './codec.ts';
import { kernelMessageSchema, type HostMessage, type KernelMessage } from './messages.ts';
import type { ContainerEgress } from '../container/egress-link.ts';

/**
 * The largest frame (UTF-8 JSON bytes) each kind of kernel message can need, with a margin; a
 * bigger one ends the session, refused from its first bytes when it comes as the kernel writes
 * it, so forged frames cost the bridge no more memory than a real one. JSON escapes take up to
 * 6 bytes a character.
 */
export const KERNEL_FRAME_LIMITS = {
  /** Up to 500 distribution names of 100 characters. */
  ready: 1024 * 1024,
  /** 64K characters of output. */
  out: 1024 * 1024,
  /** An image of 8 MiB, as base64 (11.2 MB). */
  image: 12 * 1024 * 1024,
  /** A /work/out file of 4 MiB, as base64 (5.6 MB). */
  file: 6 * 1024 * 1024,
  /** A value of 1M characters, and the error's message and traceback. */
  done: 8 * 1024 * 1024,
  /** A host call: a proxied server's MCP stdio transport takes no message over 10 MiB either. */
  req: 10 * 1024 * 1024,
  /** The kernel's word that the code went on after an interrupt. */
  ignored: 1024,
} as const;
/** Frames from the kernel larger than this end the session: the largest frame of any kind. */
export const MAX_KERNEL_FRAME_BYTES = Math.max(...Object.values(KERNEL_FRAME_LIMITS));
const FRAME_LIMITS: FrameLimits = { max: MAX_KERNEL_FRAME_BYTES, byType: KERNEL_FRAME_LIMITS };
const MAX_START_STDERR = 8 * 1024;
/** A restarted interpreter says `ready` within this, or the kernel is killed. */
export const RESTART_TIMEOUT_MS = 3_000;

export interface KernelEvents {
  message(message: KernelMessage): void;
  /** Raw bytes the kernel's process wrote to stderr (subprocesses, os.write(2), crashes). */
  stderr(text: string): void;
  exit(info: ExitInfo): void;
}

export interface ExitInfo {
  code: number | undefined;
  /** True when the host killed it (timeout without interrupt, shutdown, protocol error). */
  killedByHost: boolean;
  /** Why the host ended it, when it did. */
  reason?: string;
}

/** What the sessions layer needs of a kernel, whatever runs it. */
export interface Kernel {
  readonly name: string;
  /** Counts interpreters: a restart starts the next one (replies to the old one are dropped). */
  readonly generation: number;
  readonly alive: boolean;
  readonly exited: Promise<ExitInfo>;
  /** How the kernel ended, once it has. */
  readonly exitStatus: ExitInfo | undefined;
  /** The image's distributions, as its first interpreter reported them (never a restarted one's). */
  readonly distributions: ImageDistributions | undefined;
  /** What the image is known by (image/distributions.ts imageKey). */
  readonly imageKey: string;
  /** The image runs use instead of the configured one (the packages image), if any. */
  readonly derivedImage: string | undefined;
  /** Its egress proxy (sandbox.network), when the sandbox has a way out. */
  readonly egress?: ContainerEgress | undefined;
  on(listeners: Partial<KernelEvents>): void;
  send(message: HostMessage): void;
  /**
   * Copies the workspace in again (a remote engine's snapshot) and says what it holds; a kernel
   * without a workspace, or with it mounted, says so (WorkspaceRefreshError when there is none).
   */
  refreshWorkspace?(): Promise<WorkspaceRefresh>;
  /** A remote engine's workspace snapshot taken again (after a reset); a refusal becomes the notice. */
  renewWorkspace?(): Promise<void>;
  /** What the next run's stderr starts with, once (a refused workspace snapshot), if anything. */
  takeNotice?(): string | undefined;
  restart(timeoutMs?: number): Promise<boolean>;
  kill(reason: string): Promise<void>;
  close(graceMs?: number): Promise<void>;
}

/** What refresh_workspace() answers in the sandbox. */
export interface WorkspaceRefresh {
  mode: 'snapshot' | 'mounted';
  folders: string[];
  text: string;
  files?: number;
  bytes?: number;
  taken?: string;
}

/** How to start the process, and what it is. */
export interface KernelSpawn {
  name: string;
  command: string;
  args: readonly string[];
  /** The kernel's source, sent at start (`<length>\n<source>`) and in every restart frame. */
  source: () => Buffer;
  imageKey: string;
  derivedImage?: string;
  /** A hint for a start that failed with this stderr, if the kind of sandbox knows one. */
  startHint?: (stderr: string) => string | undefined;
  /** Ends the sandbox for good (the process may be only a client of it); the process is killed after. */
  stop?: () => Promise<void>;
  /** Words for the start failure messages: "sandbox container", "WebAssembly sandbox". */
  what: string;
}

const SPAWN_OPTIONS = {
  stdin: 'pipe',
  stdout: 'pipe',
  stderr: 'pipe',
  buffer: false,
  encoding: 'buffer',
  reject: false,
  cleanup: true,
  // Podman's conmon writes a file named "oom" into its working directory when a container is
  // OOM-killed: never into the bridge's (which may be the user's workspace).
  cwd: tmpdir(),
  // Only what the spawn names: the bridge's environment holds secrets.
  extendEnv: false,
} as const;

export class KernelProcess implements Kernel {
  readonly name: string;
  pythonVersion = '';
  /** "installed", or why the kernel's own seccomp filter is not (an architecture without one). */
  seccomp = '';
  /** What the sandbox's PID 1 is: the kernel's own reaper, or why not. */
  init = '';
  generation = 0;
  distributions: ImageDistributions | undefined;
  readonly imageKey: string;
  readonly derivedImage: string | undefined;
  private onReady: (() => void) | undefined;
  private readonly process: ResultPromise<typeof SPAWN_OPTIONS>;
  private readonly decoder = new FrameDecoder(FRAME_LIMITS);
  private killReason: string | undefined;
  private exitInfo: ExitInfo | undefined;
  private readonly exitPromise: Promise<ExitInfo>;
  private listeners: Partial<KernelEvents> = {};
  private readonly spawn: KernelSpawn;

  protected constructor(spawn: KernelSpawn, env: Record<string, string>) {
    this.spawn = spawn;
    this.name = spawn.name;
    this.imageKey = spawn.imageKey;
    this.derivedImage = spawn.derivedImage;
    this.process = execa(spawn.command, spawn.args, { ...SPAWN_OPTIONS, env });
    this.process.stdout.on('data', (chunk: Buffer) => this.onStdout(chunk));
    this.process.stderr.on('data', (chunk: Buffer) => this.listeners.stderr?.(chunk.toString('utf8')));
    // A write after the kernel died must not crash the host; exit handling reports it.
    this.process.stdin.on('error', () => {});
    this.exitPromise = this.process.then((result) => {
      this.exitInfo = {
        code: result.exitCode,
        killedByHost: this.killReason !== undefined,
        ...(this.killReason !== undefined ? { reason: this.killReason } : {}),
      };
      this.listeners.exit?.(this.exitInfo);
      return this.exitInfo;
    });
  }

  /** Starts the process and resolves once its kernel says it is ready. */
  protected static async launch<T extends KernelProcess>(kernel: T, startTimeoutMs: number): Promise<T> {
    await kernel.waitReady(startTimeoutMs);
    await kernel.afterReady();
    return kernel;
  }

  /** What a kind of sandbox sends its kernel once it is ready, before anything else (a workspace snapshot). */
  protected async afterReady(): Promise<void> {}

  get alive(): boolean {
    return this.exitInfo === undefined;
  }

  get exited(): Promise<ExitInfo> {
    return this.exitPromise;
  }

  get exitStatus(): ExitInfo | undefined {
    return this.exitInfo;
  }

  on(listeners: Partial<KernelEvents>): void {
    this.listeners = listeners;
  }

  send(message: HostMessage): void {
    if (!this.alive || this.process.stdin.destroyed) return;
    this.process.stdin.write(encodeFrame(message));
  }

  /** Sends, then waits while the kernel's stdin is full: for a stream of frames (a workspace snapshot) that must not pile up here. */
  protected async sendPaced(message: HostMessage): Promise<void> {
    if (!this.alive || this.process.stdin.destroyed) return;
    if (this.process.stdin.write(encodeFrame(message))) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        this.process.stdin.off('drain', done);
        this.process.stdin.off('close', done);
        resolve();
      };
      this.process.stdin.on('drain', done);
      this.process.stdin.on('close', done);
    });
  }

  /**
   * Replaces the kernel's interpreter with a fresh one in the same sandbox (every other
   * process in it ends): resolves true once it is ready. If it does not say so within
   * `timeoutMs` (code that holds the interpreter's lock, say), the sandbox is killed and
   * this resolves false. Frames of the old interpreter still in flight reach the listeners.
   */
  async restart(timeoutMs = RESTART_TIMEOUT_MS): Promise<boolean> {
    if (!this.alive) return false;
    this.generation++;
    const ready = new Promise<boolean>((resolve) => {
      const settle = (ok: boolean) => {
        clearTimeout(timer);
        this.onReady = undefined;
        resolve(ok);
      };
      const timer = setTimeout(() => settle(false), timeoutMs);
      this.onReady = () => settle(true);
      void this.exitPromise.then(() => settle(false));
    });
    this.send({ t: 'restart', source: this.spawn.source().toString('utf8') });
    if (await ready) return true;
    await this.kill(`its interpreter did not restart within ${timeoutMs / 1000} s`);
    return false;
  }

  /** Ends the sandbox (not just a client of it, which could leave it running). */
  async kill(reason: string): Promise<void> {
    if (!this.alive) return;
    this.killReason ??= reason;
    this.process.stdin.end();
    if (this.spawn.stop) await this.spawn.stop();
    else this.process.kill('SIGKILL');
    const timer = setTimeout(() => this.process.kill('SIGKILL'), 5_000);
    timer.unref();
    await this.exitPromise;
    clearTimeout(timer);
  }

  /** Ends stdin; the kernel exits on end-of-file. */
  async close(graceMs = 3_000): Promise<void> {
    if (!this.alive) return;
    this.process.stdin.end();
    const timer = setTimeout(() => void this.kill('closed'), graceMs);
    timer.unref();
    await this.exitPromise;
    clearTimeout(timer);
  }

  private waitReady(timeoutMs: number): Promise<void> {
    let source: Buffer;
    try {
      source = this.spawn.source();
    } catch (error) {
      // A file of the installation missing: said at once, and the process (waiting for its source) ended.
      void this.kill('start failed');
      const why = error instanceof Error ? error.message : String(error);
      return Promise.reject(new SandboxStartError(`The ${this.spawn.what}'s kernel could not be read: ${why}`));
    }
    this.process.stdin.write(`${source.length}\n`);
    this.process.stdin.write(source);
    let stderr = '';
    return new Promise<void>((resolve, reject) => {
      const fail = (why: string) => {
        clearTimeout(timer);
        void this.kill('start failed');
        const hint = this.spawn.startHint?.(stderr);
        reject(new SandboxStartError(`${why}${stderr.trim() ? `\n${stderr.trim()}` : ''}${hint ? `\n${hint}` : ''}`));
      };
      const timer = setTimeout(() => fail(`The sandbox did not start within ${Math.round(timeoutMs / 1000)} s.`), timeoutMs);
      this.listeners = {
        message: (message) => {
          if (message.t !== 'ready') return fail(`The sandbox kernel sent "${message.t}" before it was ready.`);
          clearTimeout(timer);
          this.noteReady(message);
          this.distributions = imageDistributions(message.dists, message.distsMore);
          this.listeners = {};
          resolve();
        },
        stderr: (text) => {
          if (stderr.length < MAX_START_STDERR) stderr += text.slice(0, MAX_START_STDERR - stderr.length);
        },
        exit: (info) => fail(`The ${this.spawn.what} exited while starting (exit code ${info.code ?? 'none'}).`),
      };
    });
  }

  private noteReady(ready: Extract<KernelMessage, { t: 'ready' }>): void {
    this.pythonVersion = ready.python;
    this.seccomp = ready.seccomp ?? 'not reported';
    this.init = ready.init ?? 'not reported';
  }

  private onStdout(chunk: Buffer): void {
    if (!this.alive || this.killReason !== undefined) return;
    let bodies: string[];
    try {
      bodies = this.decoder.push(chunk);
    } catch (error) {
      return this.protocolFailure(error instanceof Error ? error.message : String(error));
    }
    for (const body of bodies) {
      let parsed: KernelMessage;
      try {
        parsed = kernelMessageSchema.parse(JSON.parse(body));
      } catch (error) {
        return this.protocolFailure(
          `sandbox sent an invalid frame (${error instanceof Error ? error.message.slice(0, 200) : 'unparseable'})`,
        );
      }
      // Again by the parsed type: a frame that did not start as the kernel writes it was not checked by type.
      try {
        checkFrameSize(FRAME_LIMITS, parsed.t, body);
      } catch (error) {
        return this.protocolFailure((error as Error).message);
      }
      // Only a `ready` that is awaited counts: user code can send frames of its own.
      if (parsed.t === 'ready' && this.onReady) {
        this.noteReady(parsed);
        this.onReady();
      }
      this.listeners.message?.(parsed);
    }
  }

  private protocolFailure(why: string): void {
    const error = new ProtocolError(why);
    void this.kill(`protocol error: ${error.message}`);
  }
}

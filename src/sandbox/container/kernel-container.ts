// One sandbox container with a live kernel: a kernel process (protocol/kernel-process.ts) whose
// process is the runtime's `run -i` client of a hardened container, ended by the runtime's kill.
// On a remote engine, which cannot mount this machine's folders, it copies the workspace in as a
// snapshot over the kernel's stdin instead (workspace-snapshot.ts). Knows nothing of runs or sessions.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { RuntimeName, SandboxConfig } from '../../config/schema.ts';
import { SandboxStartError } from '../errors.ts';
import { imageKey } from '../image/distributions.ts';
import { KernelProcess, type WorkspaceRefresh } from '../protocol/kernel-process.ts';
import { kernelSource } from './kernel/source.ts';
import { mountedRefresh, snapshotFrames, takeSnapshot, WorkspaceRefreshError, type WorkspaceFolders } from './workspace-snapshot.ts';
import { cliArgv, runCli } from '../engines/cli.ts';
import type { EngineEndpoint } from '../engines/endpoint.ts';
import { killArgs, removeArgs, runArgs } from '../engines/commands.ts';
import { remoteEngine, workspaceSpec } from '../engines/workspace.ts';
import { engineHardLimits } from '../engines/ulimits.ts';
import { openEgress, type ContainerEgress, type EgressLink, type StartEgressProxy } from './egress-link.ts';
import { usernsStartHint } from '../engines/isolation.ts';
import { proxyOutOfReach } from '../engines/vm.ts';

export const OWNER = `${hostname()}/${process.pid}`;

/** Which runtime to drive, and the command that runs its CLI. */
export interface RuntimeRef {
  name: RuntimeName;
  command: string;
  /** The image to run instead of sandbox.image (the derived one with the packages). */
  image?: string;
  /** The bridge's state folder: refused as a workspace mount at every start. */
  stateDir?: string;
  /** The ID of sandbox.image, as the runtime check found it. */
  imageId?: string;
  /** What `--runtime` gets for sandbox.ociRuntime, as the runtime check resolved it. */
  ociRuntime?: string;
  /** Podman: each sandbox in its own user namespace (--userns=auto), as the runtime check found it works. */
  ownUserNamespace?: boolean;
  /** The engine the CLI talks to, as the runtime check found it: a remote one mounts no workspace. */
  endpoint?: EngineEndpoint;
  /** The VM the engine runs containers in, as the runtime check found it (engines/vm.ts): no network proxy reaches them. */
  vm?: string;
}

let counter = 0;

export class KernelContainer extends KernelProcess {
  readonly runtime: RuntimeRef;
  /** The container's egress proxy (sandbox.network), when it has a way out. */
  readonly egress: ContainerEgress | undefined;

  private constructor(
    runtime: RuntimeRef,
    config: SandboxConfig,
    session: string,
    workspace: ReturnType<typeof workspaceSpec>,
    link: EgressLink | undefined,
  ) {
    const name = `cem-${process.pid}-${++counter}-${randomBytes(3).toString('hex')}`;
    // The derived image with sandbox.packages, when the runtime check found it built.
    const image = runtime.image ? { ...config, image: runtime.image } : config;
    super(
      {
        name,
        command: runtime.command,
        args: cliArgv(
          runtime.command,
          runArgs(runtime.name, image, {
            name,
            owner: OWNER,
            session,
            ...workspace,
            ...(runtime.ociRuntime ? { ociRuntime: runtime.ociRuntime } : {}),
            ownUserNamespace: runtime.ownUserNamespace === true,
            hostLimits: engineHardLimits(remoteEngine(runtime.name, process.env, runtime.endpoint) !== undefined),
            ...(link ? { egressDir: link.dir } : {}),
          }),
        ),
        source: kernelSource,
        imageKey: imageKey(runtime, config.image),
        ...(runtime.image ? { derivedImage: runtime.image } : {}),
        startHint: usernsStartHint,
        stop: () => this.stopContainer(),
        what: 'sandbox container',
      },
      // The runtime's client needs the user's environment (its socket, configuration, PATH);
      // the container gets none of it (runArgs passes no variables through).
      process.env as Record<string, string>,
    );
    this.folders = { config, stateDir: runtime.stateDir, ...workspace };
    this.runtime = runtime;
    this.egress = link?.proxy;
    // The proxy and its folder go with the container, however it ends.
    if (link) void this.exited.then(() => link.close());
  }

  /**
   * Starts a container and resolves once its kernel says it is ready; with `startEgress`, and
   * sandbox.network letting something through on a local engine on this machine's kernel, with its own egress proxy.
   */
  static async start(
    runtime: RuntimeRef,
    config: SandboxConfig,
    session: string,
    startTimeoutMs = 60_000,
    startEgress?: StartEgressProxy,
  ): Promise<KernelContainer> {
    let workspace: ReturnType<typeof workspaceSpec>;
    let link: EgressLink | undefined;
    try {
      // Checked at every start: the folder may have changed since the configuration was read.
      workspace = workspaceSpec(runtime.name, config, process.env, runtime.stateDir, runtime.endpoint);
      link = await openEgress(startEgress, config, session, proxyOutOfReach(runtime));
    } catch (error) {
      throw new SandboxStartError(error instanceof Error ? error.message : String(error));
    }
    return KernelProcess.launch(new KernelContainer(runtime, config, session, workspace, link), startTimeoutMs);
  }

  /** Kills the container, not just the CLI client (which would leave it running). */
  private async stopContainer(): Promise<void> {
    await runCli(this.runtime.command, killArgs(this.name), { timeoutMs: 15_000 }).catch(() => undefined);
    // Docker and Podman remove a killed --rm container themselves; make sure, quietly.
    await runCli(this.runtime.command, removeArgs(this.runtime.name, [this.name]), { timeoutMs: 15_000 }).catch(() => undefined);
  }

  /** The workspace folders: mounted, or (a remote engine) copied in as a snapshot. */
  private readonly folders: WorkspaceFolders;
  /** Snapshots are sent one after another. */
  private snapshotQueue: Promise<unknown> = Promise.resolve();
  private notice: string | undefined;

  /** Before any run: the kernel reads the snapshot's frames before the first `exec`. */
  protected override async afterReady(): Promise<void> {
    await this.renewWorkspace();
  }

  /** A remote engine's snapshot taken again (at start, after a reset); a refusal becomes the next run's notice. */
  async renewWorkspace(): Promise<void> {
    if (!this.folders.snapshot) return;
    await this.refreshWorkspace().then(
      () => (this.notice = undefined),
      (error: unknown) => void (this.notice = error instanceof Error ? error.message : String(error)),
    );
  }

  takeNotice(): string | undefined {
    const notice = this.notice;
    this.notice = undefined;
    return notice;
  }

  refreshWorkspace(): Promise<WorkspaceRefresh> {
    const next = this.snapshotQueue.then(() => this.copyWorkspace());
    this.snapshotQueue = next.catch(() => undefined);
    return next;
  }

  /** Lists the folders again and streams their tar to the kernel, which empties /workspace first. */
  private async copyWorkspace(): Promise<WorkspaceRefresh> {
    if (!this.folders.snapshot) {
      if (this.folders.workspace) return mountedRefresh(this.folders.workspace);
      throw new WorkspaceRefreshError(
        'There is no workspace to refresh: no folder is given to the sandbox. The user gives one with sandbox.workspace ({"path": DIR, "access": "read-only"}), in VS Code with codeExecutionMode.sandbox.workspaceAccess.',
      );
    }
    const snapshot = await takeSnapshot(this.folders);
    for await (const frame of snapshotFrames(snapshot)) await this.sendPaced(frame);
    if ('refused' in snapshot) throw snapshot.refused;
    return snapshot.info;
  }
}

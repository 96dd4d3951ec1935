// The optional read-only workspace mounts (`sandbox.workspace`): which host folders, checked, and
// the run arguments that mount them (one at /workspace, several at /workspace/<name>, see
// workspace-names.ts) read-only, noexec, nosuid, nodev on both runtimes; on a remote engine, which
// cannot mount this machine's folders, the same folders copied in as a snapshot instead
// (container/workspace-snapshot.ts). Never taken from extraRunArgs (run-args.ts refuses mounts there).
import { realpathSync, statSync } from 'node:fs';
import { homedir, platform } from 'node:os';
import { isAbsolute, join, parse, resolve, sep } from 'node:path';
import { DEFAULT_SNAPSHOT_MAX_MB, type RuntimeName, type SandboxConfig } from '../../config/schema.ts';
import { WORKSPACE_DIR, workspaceTargets } from './workspace-names.ts';
import { isRemoteAddress, remoteEndpointText, withoutPassword, type EngineEndpoint } from './endpoint.ts';

/** A checked host folder (its real path) and where the sandbox sees it. */
export interface WorkspaceMount {
  dir: string;
  target: string;
}

export class WorkspaceError extends Error {
  override name = 'WorkspaceError';
}

/**
 * The remote engine a runtime's CLI talks to as the environment alone says it (DOCKER_HOST for
 * docker, CONTAINER_HOST for podman), without a password, or undefined for a local one: remote
 * by endpoint.ts's one rule (isRemoteAddress). A remote engine cannot mount this machine's
 * folders. The runtime check's endpoint (endpoint.ts) also knows the connections and contexts.
 */
export function remoteRuntimeHost(runtime: RuntimeName, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = (runtime === 'docker' ? env.DOCKER_HOST : env.CONTAINER_HOST)?.trim();
  return value && isRemoteAddress(value) ? withoutPassword(value) : undefined;
}

/** The remote engine for people, or undefined for a local one: as the runtime check's endpoint says, else as the environment says. */
export function remoteEngine(runtime: RuntimeName, env: NodeJS.ProcessEnv, endpoint: EngineEndpoint | undefined): string | undefined {
  return endpoint ? remoteEndpointText(endpoint) : remoteRuntimeHost(runtime, env);
}

/** Whether the configuration asks for the workspace mount at all. */
export function workspaceRequested(config: SandboxConfig): boolean {
  return config.workspace?.access === 'read-only';
}

function inside(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent.endsWith(sep) ? parent : parent + sep);
}

/** The configured folders, as given (none unless the mount is asked for). */
function workspacePaths(config: SandboxConfig): string[] {
  if (!workspaceRequested(config)) return [];
  const path = config.workspace!.path;
  return typeof path === 'string' ? [path] : [...path];
}

/** Where the configured folders appear in the sandbox, in order (no disk access). */
export function workspaceTargetsOf(config: SandboxConfig): string[] {
  return workspaceTargets(workspacePaths(config));
}

/**
 * The folders to mount (real paths) and their mount points; none when none is asked for. Throws a
 * WorkspaceError naming the first problem: a folder not absolute, missing, not a directory, a
 * file-system root, the home folder itself, a system folder (/proc, /etc...) or one inside it, or
 * one that holds (or is inside) one of `forbidden` (the state dir).
 */
export function resolveWorkspaceMounts(config: SandboxConfig, forbidden: readonly string[] = []): WorkspaceMount[] {
  const paths = workspacePaths(config);
  const targets = workspaceTargets(paths);
  return paths.map((given, i) => ({ dir: checkedFolder(given, forbidden), target: targets[i]! }));
}

function checkedFolder(given: string, forbidden: readonly string[]): string {
  if (!isAbsolute(given)) throw new WorkspaceError(`sandbox.workspace.path must be an absolute path: ${given}`);
  let real: string;
  try {
    real = realpathSync(given);
  } catch {
    throw new WorkspaceError(`sandbox.workspace.path does not exist: ${given}`);
  }
  if (!statSync(real).isDirectory()) throw new WorkspaceError(`sandbox.workspace.path is not a folder: ${given}`);
  if (parse(real).root === real) throw new WorkspaceError(`sandbox.workspace.path must not be a file-system root: ${given}`);
  if (real === safeReal(homedir())) throw new WorkspaceError(`sandbox.workspace.path must not be the home folder itself: ${given}`);
  const system = systemFolderOf(real);
  if (system) {
    throw new WorkspaceError(
      `sandbox.workspace.path must not be a system folder or inside one: ${given}${given === real ? '' : ` (${real})`} is in ${system.dir}, ${system.why}; give the project folder that holds the files the code needs`,
    );
  }
  if (/[,:"\n\r]/.test(real.replace(/^[A-Za-z]:/, '')))
    throw new WorkspaceError(`sandbox.workspace.path resolves to a path with ",", ":" or quotes: ${real}`);
  for (const dir of forbidden) {
    const other = safeReal(dir);
    if (inside(other, real) || inside(real, other))
      throw new WorkspaceError(`sandbox.workspace.path must not hold or be inside the bridge's state folder (${dir})`);
  }
  return real;
}

/**
 * Host folders that are never a workspace, nor anything under them: mounted in the sandbox they
 * would show the host's processes (with their command lines and environments), devices, kernel
 * settings, configuration or runtime sockets. macOS keeps /etc and /var/run under /private.
 */
const SYSTEM_FOLDERS: ReadonlyArray<{ dir: string; why: string }> = [
  { dir: '/proc', why: "which shows the host's processes, their command lines and environments" },
  { dir: '/sys', why: "which shows the host's kernel and device settings" },
  { dir: '/dev', why: "which holds the host's devices" },
  { dir: '/etc', why: "which holds the host's configuration and accounts" },
  { dir: '/private/etc', why: "which holds the host's configuration and accounts" },
  { dir: '/run', why: "which holds the host's runtime state and sockets (the container runtimes' among them)" },
  { dir: '/var/run', why: "which holds the host's runtime state and sockets (the container runtimes' among them)" },
  { dir: '/private/var/run', why: "which holds the host's runtime state and sockets (the container runtimes' among them)" },
  { dir: '/boot', why: "which holds the host's kernel and boot loader" },
];

/** Under a system folder, yet where people's own files are: removable drives (Fedora, Arch). */
const USER_FOLDERS_IN_SYSTEM = ['/run/media'];

/** The system folder that `real` (a resolved path) is or is inside, if any; Windows' own folder too. */
export function systemFolderOf(real: string, env: NodeJS.ProcessEnv = process.env): { dir: string; why: string } | undefined {
  if (USER_FOLDERS_IN_SYSTEM.some((dir) => real !== dir && inside(real, dir))) return undefined;
  const folders = [...SYSTEM_FOLDERS];
  if (env.SystemRoot) folders.push({ dir: env.SystemRoot, why: "which holds Windows' own files" });
  // macOS and Windows folders are not case-sensitive by default.
  const fold = platform() === 'darwin' || platform() === 'win32' ? (p: string) => p.toLowerCase() : (p: string) => p;
  for (const folder of folders) {
    // Compared with the folder's real path too: /var/run is a link to /run on most systems.
    for (const dir of new Set([folder.dir, safeReal(folder.dir)])) {
      if (inside(fold(real), fold(dir))) return folder;
    }
  }
  return undefined;
}

function safeReal(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/**
 * Mounts `dir` (already resolved) at `target`. Podman's -v takes noexec,nosuid,nodev; Docker's
 * bind mounts do not, so Docker gets an anonymous local volume that bind-mounts the folder with
 * those options (removed with the container by --rm).
 */
export function workspaceMountArgs(runtime: RuntimeName, dir: string, target: string = WORKSPACE_DIR): string[] {
  if (runtime === 'podman') return ['-v', `${dir}:${target}:ro,noexec,nosuid,nodev`];
  return [
    '--mount',
    `type=volume,dst=${target},volume-driver=local,volume-nocopy=true,volume-opt=type=none,volume-opt=device=${dir},"volume-opt=o=bind,ro,noexec,nosuid,nodev"`,
  ];
}

/** The default state folder, never mountable whatever the configuration. */
const DEFAULT_STATE_DIR = join(homedir(), '.code-execution-mode');

/** The folders a workspace mount must not hold nor be inside: the default state folder and the bridge's own. */
export function forbiddenMountDirs(stateDir?: string): string[] {
  return stateDir && resolve(stateDir) !== DEFAULT_STATE_DIR ? [DEFAULT_STATE_DIR, stateDir] : [DEFAULT_STATE_DIR];
}

/**
 * What a container start adds to its RunSpec: the resolved folders to mount, or on a remote engine
 * (which cannot mount this machine's folders) the same folders as a snapshot to copy in
 * (container/workspace-snapshot.ts); nothing when none is asked for. Remote as the runtime
 * check's endpoint says (endpoint.ts), else as the environment says.
 */
export function workspaceSpec(
  runtime: RuntimeName,
  config: SandboxConfig,
  env: NodeJS.ProcessEnv = process.env,
  stateDir?: string,
  endpoint?: EngineEndpoint,
): { workspace?: WorkspaceMount[]; snapshot?: WorkspaceMount[] } {
  if (!workspaceRequested(config)) return {};
  const mounts = resolveWorkspaceMounts(config, forbiddenMountDirs(stateDir));
  if (mounts.length === 0) return {};
  return remoteEngine(runtime, env, endpoint) ? { snapshot: mounts } : { workspace: mounts };
}

/** Size of a snapshot's /workspace tmpfs, in MiB: its cap, with room for each file's last partial page. */
export function snapshotTmpfsMiB(config: SandboxConfig): number {
  return 2 * (config.workspace?.snapshotMaxMB ?? DEFAULT_SNAPSHOT_MAX_MB) + 16;
}

/** The mounts for people: "/srv/a at /workspace/a, /srv/b at /workspace/b". */
export function mountsText(mounts: readonly WorkspaceMount[]): string {
  return mounts.map((m) => `${m.dir} at ${m.target}`).join(', ');
}

// The optional read-only workspace mount (`sandbox.workspace`): which host folder, checked, and
// the run arguments that mount it at /workspace read-only, noexec, nosuid, nodev on both
// runtimes. Never taken from extraRunArgs (run-args.ts refuses mounts there).
import { realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, parse, resolve, sep } from 'node:path';
import type { RuntimeName, SandboxConfig } from '../../config/schema.ts';

export const WORKSPACE_DIR = '/workspace';

export class WorkspaceError extends Error {
  override name = 'WorkspaceError';
}

/**
 * The remote engine a runtime's CLI talks to (DOCKER_HOST for docker, CONTAINER_HOST for podman,
 * a tcp:// or ssh:// address), or undefined for a local one. A remote engine cannot mount this
 * machine's folders.
 */
export function remoteRuntimeHost(runtime: RuntimeName, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = (runtime === 'docker' ? env.DOCKER_HOST : env.CONTAINER_HOST)?.trim();
  return value && /^(tcp|ssh|https?):\/\//i.test(value) ? value.replace(/\/\/[^@/]*@/, '//') : undefined;
}

/** Whether the configuration asks for the workspace mount at all. */
export function workspaceRequested(config: SandboxConfig): boolean {
  return config.workspace?.access === 'read-only';
}

function inside(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent.endsWith(sep) ? parent : parent + sep);
}

/**
 * The real path of the folder to mount, or undefined when none is asked for. Throws a
 * WorkspaceError naming the problem: not absolute, missing, not a directory, a file-system root,
 * the home folder itself, or a folder that holds (or is inside) one of `forbidden` (the state dir).
 */
export function resolveWorkspaceDir(config: SandboxConfig, forbidden: readonly string[] = []): string | undefined {
  if (!workspaceRequested(config)) return undefined;
  const given = config.workspace!.path;
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
  if (/[,:"\n\r]/.test(real.replace(/^[A-Za-z]:/, ''))) throw new WorkspaceError(`sandbox.workspace.path resolves to a path with ",", ":" or quotes: ${real}`);
  for (const dir of forbidden) {
    const other = safeReal(dir);
    if (inside(other, real) || inside(real, other)) throw new WorkspaceError(`sandbox.workspace.path must not hold or be inside the bridge's state folder (${dir})`);
  }
  return real;
}

function safeReal(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/**
 * Mounts `dir` (already resolved) at /workspace. Podman's -v takes noexec,nosuid,nodev; Docker's
 * bind mounts do not, so Docker gets an anonymous local volume that bind-mounts the folder with
 * those options (removed with the container by --rm).
 */
export function workspaceMountArgs(runtime: RuntimeName, dir: string): string[] {
  if (runtime === 'podman') return ['-v', `${dir}:${WORKSPACE_DIR}:ro,noexec,nosuid,nodev`];
  return [
    '--mount',
    `type=volume,dst=${WORKSPACE_DIR},volume-driver=local,volume-nocopy=true,volume-opt=type=none,volume-opt=device=${dir},"volume-opt=o=bind,ro,noexec,nosuid,nodev"`,
  ];
}

/** The default state folder, never mountable whatever the configuration (the bridge also checks its own). */
const DEFAULT_STATE_DIR = join(homedir(), '.code-execution-mode');

/**
 * What a container start adds to its RunSpec: the resolved folder, or nothing when none is asked
 * for or the runtime is remote (the sandbox check says so; the mount is not attempted).
 */
export function workspaceSpec(runtime: RuntimeName, config: SandboxConfig, env: NodeJS.ProcessEnv = process.env): { workspace?: string } {
  if (!workspaceRequested(config) || remoteRuntimeHost(runtime, env)) return {};
  const dir = resolveWorkspaceDir(config, [DEFAULT_STATE_DIR]);
  return dir ? { workspace: dir } : {};
}

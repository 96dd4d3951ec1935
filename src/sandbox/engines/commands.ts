// Argument lists for the container CLIs. Pure functions, so the hardening flags are tested
// exactly without starting anything. Podman and Docker share these flags.
import type { RuntimeName, SandboxConfig } from '../../config/schema.ts';
import { snapshotTmpfsMiB, workspaceMountArgs, type WorkspaceMount } from './workspace.ts';
import { WORKSPACE_DIR } from './workspace-names.ts';
import { ociRuntimeArgs } from './oci-runtime.ts';
import { hostHardLimits, ulimitArgs, type HostLimits } from './ulimits.ts';
import { EGRESS_MOUNT } from '../egress/socket-dir.ts';

/** Marks every container this product starts; the value is always "1". */
export const LABEL = 'io.code-execution-mode';
/** `<hostname>/<pid>` of the process that started the container, for crash clean-up. */
export const OWNER_LABEL = `${LABEL}.owner`;
export const SESSION_LABEL = `${LABEL}.session`;

/** Where user code runs and may write; a tmpfs, like /tmp. */
const WORK_DIR = '/work';
/** nobody:nogroup in Debian-based images; numeric so that the image needs no passwd entry. */
export const SANDBOX_UID = 65534;
const SANDBOX_USER = `${SANDBOX_UID}:${SANDBOX_UID}`;
/**
 * Host ids of a sandbox's own user namespace: every id an image's files use (podman's largest
 * automatic size). Given, not estimated: podman 4.3's estimate reads the image while holding a
 * storage lock, and concurrent starts deadlock every podman command on the host.
 */
export const USERNS_IDS = 65536;

/**
 * Reads the kernel source from stdin and runs it. The length comes first on its own line so
 * that the kernel, not a read-ahead buffer, owns every byte after the source.
 */
export const BOOTSTRAP = "import sys;exec(compile(sys.stdin.buffer.read(int(sys.stdin.buffer.readline())),'<kernel>','exec'))";

const PROXY_VARIABLES = ['HTTP_PROXY', 'HTTPS_PROXY', 'FTP_PROXY', 'NO_PROXY', 'ALL_PROXY'].flatMap((n) => [n, n.toLowerCase()]);

export interface RunSpec {
  name: string;
  owner: string;
  session: string;
  /** The resolved host folders to mount read-only (workspace.ts); none when absent. */
  workspace?: readonly WorkspaceMount[];
  /** A remote engine's workspace folders: a tmpfs at /workspace (snapshotTmpfsMiB), which the kernel fills with their snapshot. */
  snapshot?: readonly WorkspaceMount[];
  /** What `--runtime` gets, as the runtime check resolved sandbox.ociRuntime (default: the setting itself). */
  ociRuntime?: string;
  /** Hard limits the open-file and process limits are clamped to (default: this process's; none on a remote engine, engineHardLimits). */
  hostLimits?: HostLimits;
  /** Podman: the sandbox in its own user namespace (`--userns=auto:size=…`), as the runtime check found it works. */
  ownUserNamespace?: boolean;
  /** The host folder holding the egress proxy's socket (sandbox.network), mounted read-only at EGRESS_MOUNT. */
  egressDir?: string;
}

/**
 * tmpfs options that let the sandbox user write. Docker ignores `mode` on a new mount point
 * but takes `uid`/`gid`; Podman 4 rejects `uid` but honours `mode`.
 */
function tmpfsOptions(runtime: RuntimeName, size: string): string {
  const owner = runtime === 'docker' ? `uid=${SANDBOX_UID},gid=${SANDBOX_UID},mode=0700` : 'mode=1777';
  return `rw,noexec,nosuid,nodev,size=${size},${owner}`;
}

export function runArgs(runtime: RuntimeName, config: SandboxConfig, spec: RunSpec): string[] {
  const tmpfs = tmpfsOptions(runtime, config.tmpSize);
  return [
    'run',
    // Extra options first (an allow-list, see config/run-args.ts): the hardening after them wins anyway.
    ...config.extraRunArgs,
    '--rm',
    '-i',
    // What the sandbox writes (its frames: output, values, the tools' answers) goes to the bridge
    // only, never into the engine's log (docker's json-file, podman's k8s-file or the journal,
    // which can outlive the container); nor does each line cost a log write.
    '--log-driver',
    'none',
    // No init binary: the kernel is PID 1 and forks itself into a reaper that sandboxed code
    // cannot reach (kernel/pid1.py). Explicit, because a runtime's configuration may default to one.
    '--init=false',
    '--pull',
    'never',
    '--name',
    spec.name,
    '--label',
    `${LABEL}=1`,
    '--label',
    `${OWNER_LABEL}=${spec.owner}`,
    '--label',
    `${SESSION_LABEL}=${spec.session}`,
    '--network',
    'none',
    ...ociRuntimeArgs(runtime, spec.ociRuntime ?? config.ociRuntime),
    '--read-only',
    // Podman adds writable, executable tmpfs on /run and /var/tmp to read-only containers, and
    // host entries in /etc/hosts: neither is wanted in the sandbox.
    ...(runtime === 'podman' ? ['--read-only-tmpfs=false', '--no-hosts'] : []),
    // The CLIs copy the host's proxy settings (and any credentials in them) into containers:
    // podman from its environment, docker from its config.json. The sandbox has no network.
    ...(runtime === 'podman' ? ['--http-proxy=false'] : PROXY_VARIABLES.flatMap((name) => ['--env', `${name}=`])),
    '--cap-drop',
    'ALL',
    '--security-opt',
    'no-new-privileges',
    '--user',
    SANDBOX_USER,
    // Its own range of host ids, so that no two sandboxes share a host uid (isolation.ts).
    ...(runtime === 'podman' && spec.ownUserNamespace ? [`--userns=auto:size=${USERNS_IDS}`] : []),
    '--memory',
    config.memory,
    '--memory-swap',
    config.memory,
    '--pids-limit',
    String(config.pids),
    '--cpus',
    String(config.cpus),
    // The sandbox's own limits, never the runtime's defaults (which may exceed the host's hard limits).
    ...ulimitArgs(config, spec.hostLimits ?? hostHardLimits()),
    '--tmpfs',
    `/tmp:${tmpfs}`,
    '--tmpfs',
    `${WORK_DIR}:${tmpfs}`,
    ...(spec.snapshot?.length ? ['--tmpfs', `${WORKSPACE_DIR}:${tmpfsOptions(runtime, `${snapshotTmpfsMiB(config)}m`)}`] : []),
    ...(spec.workspace ?? []).flatMap((mount) => workspaceMountArgs(runtime, mount.dir, mount.target)),
    ...(spec.egressDir ? egressMountArgs(runtime, spec.egressDir) : []),
    '--workdir',
    WORK_DIR,
    '--env',
    `HOME=${WORK_DIR}`,
    '--env',
    'PYTHONDONTWRITEBYTECODE=1',
    '--env',
    'PYTHONUNBUFFERED=1',
    '--env',
    'PYTHONIOENCODING=utf-8',
    '--env',
    'MPLBACKEND=Agg',
    '--entrypoint',
    'python3',
    config.image,
    '-u',
    '-c',
    BOOTSTRAP,
  ];
}

/**
 * Mounts the folder of the egress proxy's socket (sandbox.network), read-only: connecting to a
 * socket needs no write. Docker's --mount refuses a missing folder instead of making one.
 */
export function egressMountArgs(runtime: RuntimeName, dir: string): string[] {
  if (runtime === 'podman') return ['-v', `${dir}:${EGRESS_MOUNT}:ro,noexec,nosuid,nodev`];
  return ['--mount', `type=bind,source=${dir},target=${EGRESS_MOUNT},readonly`];
}

/** Prints this marker, then the Python version, when a hardened sandbox really starts. */
export const PROBE_MARKER = 'cem-sandbox-ok';
const PROBE_CODE = `import sys;print('${PROBE_MARKER}',*sys.version_info[:2])`;

/** A one-shot container with exactly the hardening of a session: proves the runtime can run one. */
export function probeArgs(runtime: RuntimeName, config: SandboxConfig, spec: RunSpec): string[] {
  const args = runArgs(runtime, config, spec);
  // runArgs ends with the kernel's bootstrap: `-u -c BOOTSTRAP`.
  return [...args.slice(0, -3), '-c', PROBE_CODE];
}

export function killArgs(name: string): string[] {
  return ['kill', '--signal', 'KILL', name];
}

/** Force-removes containers at once; Podman would otherwise wait 10 s for a polite stop. */
export function removeArgs(runtime: RuntimeName, names: readonly string[]): string[] {
  return runtime === 'podman' ? ['rm', '--force', '--ignore', '--time', '0', ...names] : ['rm', '--force', ...names];
}

/**
 * One line per container with our label, running or not: its full id, a tab, its owner. The
 * owner comes with the listing: read in a second call, a container could go in between.
 */
export function listOwnedArgs(runtime: RuntimeName): string[] {
  // Podman's template sees the labels as a map, Docker's as text with a Label method.
  const owner = runtime === 'podman' ? `{{index .Labels "${OWNER_LABEL}"}}` : `{{.Label "${OWNER_LABEL}"}}`;
  return ['ps', '-a', '--no-trunc', '--filter', `label=${LABEL}=1`, '--format', `{{.ID}}\t${owner}`];
}

export function imageExistsArgs(image: string): string[] {
  return ['image', 'inspect', '--format', '{{.Id}}', image];
}

export function pullArgs(image: string): string[] {
  return ['pull', image];
}

export function versionArgs(runtime: RuntimeName): string[] {
  return runtime === 'podman' ? ['version', '--format', 'json'] : ['version', '--format', '{{json .}}'];
}

export function infoArgs(runtime: RuntimeName): string[] {
  return runtime === 'podman' ? ['info', '--format', 'json'] : ['info', '--format', '{{json .}}'];
}

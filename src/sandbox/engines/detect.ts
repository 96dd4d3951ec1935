// Answers "can a sandbox really run here?", not just "does the CLI answer": for each runtime,
// whether it is installed, its daemon or machine answers, it enforces limits, the image is
// present, and a container with exactly the sandbox's hardening starts. Each
// check is reported by name with the fix a person can apply; a missing runtime is an
// explained error, never a crash.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { RuntimeName, SandboxBackend, SandboxConfig } from '../../config/schema.ts';
import { ImageMissingError, RuntimeUnavailableError } from '../errors.ts';
import { CliError, runCli, setLeadingArgs, type CliResult } from './cli.ts';
import { imageExistsArgs, infoArgs, PROBE_MARKER, probeArgs, type RunSpec, versionArgs } from './commands.ts';
import { forbiddenMountDirs, mountsText, remoteEngine, resolveWorkspaceMounts, workspaceRequested } from './workspace.ts';
import { locateRuntime } from './locate.ts';
import { forgetPodmanInfo, keepPodmanInfo, keptPodmanInfo, podmanInfoKey } from './podman-info-cache.ts';
import {
  builtInEndpoint,
  detectEndpoint,
  EndpointError,
  endpointText,
  selectedName,
  selectionArgs,
  type EngineEndpoint,
} from './endpoint.ts';
import { OWNER, type RuntimeRef } from '../container/kernel-container.ts';
import {
  listSnapshot,
  snapshotMaxBytes,
  SnapshotRefusedError,
  snapshotText,
  type SnapshotListing,
} from '../container/workspace-snapshot.ts';
import { packagesState, packagesSummary, type PackagesState } from '../image/derived.ts';
import { checkWasm, type WasmStatus } from '../wasm/check.ts';
import { networkEnabled } from '../egress/socket-dir.ts';
import {
  checkDockerOciRuntime,
  checkPodmanOciRuntime,
  dockerRegistration,
  gvisorNetworkFailure,
  type OciRuntimeFinding,
} from './oci-runtime.ts';
import { engineHardLimits, rlimitFailure, sandboxUlimits } from './ulimits.ts';
import { engineVm, type ProxyOutOfReach } from './vm.ts';
import { dockerIsolation, ISOLATED, podmanUsernsUnavailable, rootlessIsolation, USERNS_FAILURE, type Isolation } from './isolation.ts';

export type RuntimeState = 'ready' | 'limits-not-enforced' | 'image-missing' | 'start-failed' | 'daemon-down' | 'not-installed';

export type CheckName =
  'installed' | 'engine' | 'daemon' | 'limits' | 'image' | 'packages' | 'workspace' | 'network' | 'oci-runtime' | 'start' | 'isolation';

/** One named check: passed, failed, or not reached (`ok: null`) because an earlier one failed. */
export interface Check {
  name: CheckName;
  ok: boolean | null;
  detail: string;
}

/** Something a person can do about a failed check. */
export interface Fix {
  kind: 'pull' | 'build' | 'install' | 'start' | 'setting' | 'docs';
  label: string;
  /** A shell command that applies the fix, to run in a terminal. */
  command?: string;
  url?: string;
  /** The setting (without the `codeExecutionMode.` prefix) that fixes it. */
  setting?: string;
}

export interface RuntimeStatus {
  name: RuntimeName;
  /** The command run for this runtime: a full path when found, else its bare name. */
  command: string;
  state: RuntimeState;
  version?: string;
  rootless?: boolean;
  cgroupVersion?: string;
  /** Python version of the image, once a sandbox started. */
  python?: string;
  /** The image runs use when it is not sandbox.image: the derived image with sandbox.packages. */
  image?: string;
  /** The ID of sandbox.image (what its installed distributions are remembered by). */
  imageId?: string;
  /** sandbox.packages in this runtime: built (runs use it), or not (runs use the base image). */
  packages?: PackagesState;
  /** The runtime's own OCI runtime (podman: runc or crun; docker: its default), as its info says. */
  defaultOciRuntime?: string;
  /** Docker: the OCI runtimes its daemon has registered, as `docker info` lists them. */
  registeredOciRuntimes?: unknown;
  /** What `--runtime` gets for sandbox.ociRuntime, once found (docker: the registered name). */
  ociRuntime?: string;
  /** The state folder the check was told of: each container start refuses to mount it too. */
  stateDir?: string;
  /** The engine the CLI talks to and how it was chosen (endpoint.ts), once known. */
  endpoint?: EngineEndpoint;
  /** The VM the engine runs containers in (vm.ts), when one is: the network proxy's socket cannot reach them. */
  vm?: string;
  /** How sandboxes are kept apart from each other on the host (isolation.ts), once known. */
  isolation?: Isolation;
  /** Podman: each sandbox in its own user namespace (--userns=auto), as the check found it works. */
  ownUserNamespace?: boolean;
  /** Plain-language problems and what to do about them. */
  problems: string[];
  checks: Check[];
  fixes: Fix[];
}

/** Whether the runtime can run the sandbox (limits not enforced still runs, with a warning). */
function isUsable(status: Pick<RuntimeStatus, 'state'>): boolean {
  return status.state === 'ready' || status.state === 'limits-not-enforced';
}

const idMappingSchema = z.object({ container_id: z.number(), host_id: z.number(), size: z.number() });

const podmanInfoSchema = z.object({
  host: z.object({
    cgroupVersion: z.string().optional(),
    security: z.object({ rootless: z.boolean().optional() }).optional(),
    idMappings: z
      .object({ uidmap: z.array(idMappingSchema).nullable().optional(), gidmap: z.array(idMappingSchema).nullable().optional() })
      .optional(),
    ociRuntime: z.object({ name: z.string() }).optional(),
  }),
  version: z.object({ Version: z.string() }).optional(),
});

const dockerInfoSchema = z.object({
  ServerVersion: z.string().optional(),
  CgroupVersion: z.string().optional(),
  MemoryLimit: z.boolean().optional(),
  PidsLimit: z.boolean().optional(),
  SecurityOptions: z.array(z.string()).nullable().optional(),
  DefaultRuntime: z.string().optional(),
  Runtimes: z.unknown().optional(),
});

const versionSchema = z.object({ Client: z.object({ Version: z.string() }) });

export interface DetectOptions {
  /** Commands to run for each runtime, e.g. a full path; wins over the configured paths. */
  commands?: Partial<Record<RuntimeName, string>>;
  /** Install folders searched after PATH (default: this OS's well-known ones). */
  searchDirs?: readonly string[];
  /** Environment for the runtime's CLI (default: the process's). */
  env?: NodeJS.ProcessEnv;
  /**
   * A local podman's `info` may be the answer kept from an earlier check (podman-info-cache.ts):
   * for a bridge's first start, whose own first container then proves the engine answers.
   */
  cachedInfo?: boolean;
  timeoutMs?: number;
  /** The bridge's state folder: never mounted as the workspace (nor is the default one). */
  stateDir?: string;
  /**
   * Every check but the one-shot hardened container: the caller's first sandbox, which has the
   * same hardening, proves the start instead (startProven), or the caller runs all the checks
   * again when it does not start, so that a failure is explained as always.
   */
  skipStart?: boolean;
}

const INSTALL_DOCS: Record<RuntimeName, string> = {
  podman: 'https://podman.io/docs/installation',
  docker: 'https://docs.docker.com/engine/install/',
};

type EngineSettings = Partial<Pick<SandboxConfig, 'podmanPath' | 'dockerPath' | 'podmanConnection' | 'dockerContext'>>;

function configuredPath(name: RuntimeName, sandbox?: EngineSettings): string | undefined {
  return name === 'podman' ? sandbox?.podmanPath : sandbox?.dockerPath;
}

/**
 * The runtime's CLI: the command given, the configured path, else PATH and the install folders.
 * Every later call of it starts with the connection or context the settings pick.
 */
function locate(name: RuntimeName, options: DetectOptions, sandbox?: EngineSettings) {
  const configured = options.commands?.[name] ?? configuredPath(name, sandbox);
  const located = locateRuntime(name, {
    ...(configured ? { configured } : {}),
    ...(options.searchDirs ? { searchDirs: options.searchDirs } : {}),
  });
  setLeadingArgs(located.command, selectionArgs(name, sandbox));
  return located;
}

/** The runtime's CLI as the settings give it (path, connection or context), for a call before any check. */
export function locateConfigured(name: RuntimeName, sandbox: EngineSettings): string {
  return locate(name, {}, sandbox).command;
}

/** Notes which engine the CLI talks to; false (the status says why) when the chosen one does not exist. */
async function readEndpoint(status: RuntimeStatus, endpoint: Promise<EngineEndpoint>): Promise<boolean> {
  try {
    status.endpoint = await endpoint;
    status.checks.push({ name: 'engine', ok: true, detail: endpointText(status.endpoint) });
    return true;
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    if (!(error instanceof EndpointError)) {
      // The CLI could not list its connections or contexts: the daemon check says what is wrong.
      status.checks.push({ name: 'engine', ok: null, detail: `not known: ${detail}` });
      return true;
    }
    status.state = 'daemon-down';
    status.checks.push({ name: 'engine', ok: false, detail });
    status.problems.push(detail);
    const setting = status.name === 'podman' ? 'sandbox.podmanConnection' : 'sandbox.dockerContext';
    status.fixes.push({ kind: 'setting', label: `Change ${setting}`, setting });
    return false;
  }
}

/**
 * The CLI-level checks: installed (PATH, then install folders, or the configured path), the
 * daemon or machine answering, and whether resource limits are enforced.
 */
export async function probeRuntime(
  name: RuntimeName,
  options: DetectOptions = {},
  sandbox?: EngineSettings & Partial<Pick<SandboxConfig, 'maxSessions' | 'prewarm'>>,
): Promise<RuntimeStatus> {
  const located = locate(name, options, sandbox);
  const command = located.command;
  const timeoutMs = options.timeoutMs ?? 20_000;
  const cli = { timeoutMs, ...(options.env ? { env: options.env } : {}) };
  const status: RuntimeStatus = { name, command, state: 'not-installed', problems: [], checks: [], fixes: [] };
  const env = options.env ?? process.env;
  // The key of a local podman's kept `info` (podman-info-cache.ts), made once for reading and keeping.
  const key = name === 'podman' ? podmanInfoKey(command, env) : undefined;
  const kept = options.cachedInfo === true && key && !selectedName('podman', sandbox) ? keptPodmanInfo(key, env) : undefined;
  // Asked together (each is a CLI start, `info` the slowest); read in order, as if one by one.
  // A kept `info` was kept for podman's built-in engine only, under a key that covers its binary
  // and the files that name connections: while it holds, the client and the engine are as they
  // were, so neither is asked again (two CLI starts less per bridge start).
  const version = kept ? Promise.resolve(undefined) : runCli(command, versionArgs(name), cli);
  const endpoint = kept ? Promise.resolve(builtInEndpoint('podman')) : detectEndpoint(name, command, { ...cli, selection: sandbox });
  endpoint.catch(() => undefined);
  const infoOut = engineInfo(command, infoArgs(name), cli, endpoint, { key, kept });
  infoOut.catch(() => undefined);
  try {
    const out = await version;
    const parsed = versionSchema.safeParse(out ? JSON.parse(out.stdout) : undefined);
    if (parsed.success) status.version = parsed.data.Client.Version;
    else if (kept) status.version = keptVersion(kept);
  } catch (error) {
    if (error instanceof CliError && error.notFound) {
      const where = located.found === 'configured' ? `at the configured path ${command}` : 'on PATH or in the usual install folders';
      status.problems.push(`${name} is not installed (no \`${name}\` ${where}).`);
      status.checks.push({ name: 'installed', ok: false, detail: `not found ${where}` });
      status.fixes.push(
        { kind: 'install', label: `Install ${name === 'podman' ? 'Podman' : 'Docker'}`, url: INSTALL_DOCS[name] },
        { kind: 'setting', label: `Set the path of ${name}`, setting: `sandbox.${name}Path` },
      );
      return status;
    }
    // `docker version` fails when the daemon is down but still names the client: go on to info.
  }
  status.checks.push({ name: 'installed', ok: true, detail: `${command}${status.version ? ` (client ${status.version})` : ''}` });
  if (!(await readEndpoint(status, endpoint))) return status;
  try {
    const out = await infoOut;
    if (keptAnswers.has(out)) readKeptInfo.add(status);
    const info: unknown = JSON.parse(out.stdout);
    if (name === 'podman') readPodmanInfo(info, status, sandboxesAtOnce(sandbox));
    else readDockerInfo(info, status);
    const vm = engineVm(name, status.endpoint, info);
    if (vm) status.vm = vm;
  } catch (error) {
    status.state = 'daemon-down';
    const detail = error instanceof Error ? error.message : String(error);
    status.checks.push({ name: 'daemon', ok: false, detail });
    if (name === 'docker') {
      status.problems.push(`The Docker daemon does not answer: start Docker (or Docker Desktop). ${detail}`);
      status.fixes.push({
        kind: 'start',
        label: 'Start Docker',
        command: process.platform === 'linux' ? 'sudo systemctl start docker' : 'open -a Docker',
      });
    } else {
      status.problems.push(`Podman does not answer: on macOS and Windows start its machine with \`podman machine start\`. ${detail}`);
      status.fixes.push({ kind: 'start', label: 'Start the Podman machine', command: 'podman machine start' });
    }
  }
  return status;
}

/** The statuses whose engine `info` was the kept answer, not podman's own. */
const readKeptInfo = new WeakSet<RuntimeStatus>();
/** The answers engineInfo read back rather than asked for. */
const keptAnswers = new WeakSet<CliResult>();

/** The version in a kept `info` (the client's: a local podman is one binary). */
function keptVersion(stdout: string): string | undefined {
  try {
    return podmanInfoSchema.safeParse(JSON.parse(stdout)).data?.version?.Version;
  } catch {
    return undefined;
  }
}

/**
 * The engine's `info`: the kept answer when there is one, else asked. A local podman's answer
 * (its built-in engine; `key` is set for podman only) is kept for the checks that may read it back.
 */
async function engineInfo(
  command: string,
  args: string[],
  cli: { timeoutMs: number; env?: NodeJS.ProcessEnv },
  endpoint: Promise<EngineEndpoint>,
  podman: { key: string | undefined; kept: string | undefined },
): Promise<CliResult> {
  if (podman.kept !== undefined) {
    const answer = { stdout: podman.kept, stderr: '' };
    keptAnswers.add(answer);
    return answer;
  }
  const env = cli.env ?? process.env;
  try {
    const out = await runCli(command, args, cli);
    const local = await endpoint.then(
      (ep) => !ep.remote && !ep.machine && ep.name === undefined,
      () => false,
    );
    if (podman.key && local) keepPodmanInfo(podman.key, out.stdout, env);
    return out;
  } catch (error) {
    if (podman.key) forgetPodmanInfo(env);
    throw error;
  }
}

/** Sandboxes one bridge may run at once: its sessions, a prewarmed spare, and a check beside them. */
function sandboxesAtOnce(sandbox?: Partial<Pick<SandboxConfig, 'maxSessions' | 'prewarm'>>): number | undefined {
  return sandbox?.maxSessions === undefined ? undefined : sandbox.maxSessions + (sandbox.prewarm === false ? 0 : 1) + 1;
}

function readPodmanInfo(raw: unknown, status: RuntimeStatus, sandboxes: number | undefined): void {
  const info = podmanInfoSchema.parse(raw);
  status.rootless = info.host.security?.rootless ?? false;
  const ids = info.host.idMappings;
  if (status.rootless && sandboxes !== undefined) {
    const shared = rootlessIsolation(ids?.uidmap ?? [], ids?.gidmap ?? [], sandboxes);
    if (shared) status.isolation = shared;
  }
  status.cgroupVersion = info.host.cgroupVersion;
  if (info.version?.Version) status.version = info.version.Version;
  if (info.host.ociRuntime) status.defaultOciRuntime = info.host.ociRuntime.name;
  status.state = 'ready';
  const oci = status.defaultOciRuntime ? `; OCI runtime ${status.defaultOciRuntime}` : '';
  status.checks.push({
    name: 'daemon',
    ok: true,
    detail: `podman ${status.version ?? ''} answers (${status.rootless ? 'rootless' : 'rootful'}${oci})`.replace('  ', ' '),
  });
  if (status.rootless && status.cgroupVersion === 'v1') {
    status.state = 'limits-not-enforced';
    const why =
      'Rootless Podman on cgroups v1 ignores memory, CPU and process limits: sandboxed code could exhaust ' +
      'this machine. Switch the host to cgroups v2 (systemd.unified_cgroup_hierarchy=1) or use rootful Podman or Docker.';
    status.problems.push(why);
    status.checks.push({ name: 'limits', ok: false, detail: 'rootless on cgroups v1: memory, CPU and process limits are ignored' });
    status.fixes.push({ kind: 'docs', label: 'About cgroups v2', url: 'https://podman.io/docs/installation#cgroup-v2' });
  } else {
    status.checks.push({ name: 'limits', ok: true, detail: `enforced (cgroups ${status.cgroupVersion ?? 'unknown'})` });
  }
}

function readDockerInfo(raw: unknown, status: RuntimeStatus): void {
  const info = dockerInfoSchema.parse(raw);
  status.rootless = (info.SecurityOptions ?? []).some((o) => o.includes('name=rootless'));
  status.isolation = dockerIsolation(info.SecurityOptions ?? []);
  status.cgroupVersion = info.CgroupVersion ? `v${info.CgroupVersion.replace(/^v/, '')}` : undefined;
  if (info.ServerVersion) status.version = info.ServerVersion;
  if (info.DefaultRuntime) status.defaultOciRuntime = info.DefaultRuntime;
  if (info.Runtimes !== undefined) status.registeredOciRuntimes = info.Runtimes;
  status.state = 'ready';
  const oci = status.defaultOciRuntime ? ` (OCI runtime ${status.defaultOciRuntime})` : '';
  status.checks.push({ name: 'daemon', ok: true, detail: `the Docker daemon ${status.version ?? ''} answers${oci}`.replace('  ', ' ') });
  const missing = [info.MemoryLimit === false ? 'memory' : '', info.PidsLimit === false ? 'process' : ''].filter(Boolean);
  if (missing.length > 0 || (status.rootless && status.cgroupVersion === 'v1')) {
    status.state = 'limits-not-enforced';
    const what = missing.length > 0 ? missing.join(' and ') : 'resource';
    status.problems.push(
      `Docker does not enforce ${what} limits on this host: ` +
        'sandboxed code could exhaust this machine. Enable cgroup memory/pids controllers or use cgroups v2.',
    );
    status.checks.push({ name: 'limits', ok: false, detail: `${what} limits are not enforced` });
  } else {
    status.checks.push({ name: 'limits', ok: true, detail: `enforced (cgroups ${status.cgroupVersion ?? 'unknown'})` });
  }
}

/**
 * All the checks for one runtime: the CLI-level ones, then the image, then a one-shot
 * container with the sandbox's exact hardening. About a container start (0.2-0.5 s).
 */
export async function checkRuntime(name: RuntimeName, sandbox: SandboxConfig, options: DetectOptions = {}): Promise<RuntimeStatus> {
  const cli = { timeoutMs: options.timeoutMs ?? 30_000, ...(options.env ? { env: options.env } : {}) };
  // The image and packages lookups start beside the CLI-level checks; their answers are read
  // only where they were asked before, once those checks passed.
  const command = locate(name, options, sandbox).command;
  const image = runCli(command, imageExistsArgs(sandbox.image), cli);
  image.catch(() => undefined);
  const packagesFound = packagesState(command, sandbox, cli);
  packagesFound.catch(() => undefined);
  const status = await probeRuntime(name, options, sandbox);
  if (options.stateDir) status.stateDir = options.stateDir;
  if (!isUsable(status)) return status;
  if (sandbox.ociRuntime !== undefined && !(await ociRuntimeFound(status, sandbox.ociRuntime, cli))) return status;
  try {
    const id = (await image).stdout.trim();
    if (/^[A-Za-z0-9:]{1,200}$/.test(id)) status.imageId = id;
    status.checks.push({ name: 'image', ok: true, detail: `${sandbox.image} is present` });
  } catch {
    status.state = 'image-missing';
    status.checks.push({ name: 'image', ok: false, detail: `${sandbox.image} is not present in ${name}` });
    status.problems.push(`The sandbox image ${sandbox.image} is not present in ${name}; pull it once.`);
    status.fixes.push({ kind: 'pull', label: `Pull ${sandbox.image}`, command: `${name} pull ${sandbox.image}` });
    return status;
  }
  const packages = await packagesFound;
  if (packages) {
    status.packages = packages;
    if (packages.state === 'built') {
      status.image = packages.tag;
      status.checks.push({ name: 'packages', ok: true, detail: `${packagesSummary(packages.packages)} installed (${packages.tag})` });
    } else {
      // Not a blocker: runs go on in the base image, and say the packages are not there.
      const what = packages.state === 'missing' && packages.stale.length > 0 ? 'stale (the list or the base image changed)' : 'not built';
      status.checks.push({
        name: 'packages',
        ok: false,
        detail: `${packagesSummary(packages.packages)}: ${what}; runs use ${sandbox.image} without them`,
      });
      status.problems.push(`The sandbox image with sandbox.packages (${packagesSummary(packages.packages)}) is ${what}: build it once.`);
      status.fixes.push({ kind: 'build', label: 'Build the sandbox image with its packages', command: 'code-execution-mode build-image' });
    }
  }
  const remote = remoteEngine(name, options.env ?? process.env, status.endpoint);
  const spec: RunSpec = {
    name: `cem-probe-${process.pid}-${randomBytes(3).toString('hex')}`,
    owner: OWNER,
    session: 'probe',
    ...(status.ociRuntime ? { ociRuntime: status.ociRuntime } : {}),
    hostLimits: engineHardLimits(remote !== undefined),
  };
  if (workspaceRequested(sandbox)) {
    try {
      const mounts = resolveWorkspaceMounts(sandbox, forbiddenMountDirs(options.stateDir));
      if (remote) {
        // Copied in at each start instead (container/workspace-snapshot.ts): the tmpfs it goes to is proven with the start.
        spec.snapshot = mounts;
        noteSnapshot(status, name, remote, await listSnapshot(mounts, snapshotMaxBytes(sandbox)).catch((error: unknown) => error));
      } else {
        spec.workspace = mounts;
        status.checks.push({ name: 'workspace', ok: true, detail: `mounted read-only: ${mountsText(mounts)}` });
      }
    } catch (error) {
      status.checks.push({ name: 'workspace', ok: false, detail: (error as Error).message });
      status.problems.push(`${(error as Error).message}: fix or clear sandbox.workspace.`);
      status.fixes.push({ kind: 'setting', label: 'Change the workspace mount', setting: 'sandbox.workspaceAccess' });
      status.state = 'start-failed';
      return status;
    }
  }
  noteNetwork(status, sandbox, remote);
  if (options.skipStart) return status;
  const limitsWarning = status.state === 'limits-not-enforced';
  try {
    const image = status.image ? { ...sandbox, image: status.image } : sandbox;
    const out = await probeIsolated(status, (own) =>
      runCli(status.command, probeArgs(name, image, { ...spec, ownUserNamespace: own }), {
        ...cli,
        timeoutMs: options.timeoutMs ?? 60_000,
      }),
    );
    const words = out.stdout.trim().split(/\s+/);
    if (words[0] !== PROBE_MARKER) throw new CliError(status.command, ['run'], 0, `unexpected output: ${out.stdout.slice(0, 200)}`, false);
    status.python = words.slice(1).join('.');
    status.checks.push({ name: 'start', ok: true, detail: `a hardened sandbox starts (Python ${status.python})` });
    noteIsolation(status);
    status.state = limitsWarning ? 'limits-not-enforced' : 'ready';
  } catch (error) {
    const stderr = error instanceof CliError ? error.stderr : String(error);
    const tail = stderr.trim().split('\n').slice(-3).join('\n').slice(0, 600);
    if (explainStartFailure(status, sandbox, stderr, tail, remote)) return status;
    status.state = 'start-failed';
    const noPython = /python3.*(not found|no such file)|executable file not found/i.test(stderr);
    status.checks.push({
      name: 'start',
      ok: false,
      detail: noPython ? `${sandbox.image} has no python3` : tail || 'the container did not start',
    });
    status.problems.push(
      noPython
        ? `The image ${sandbox.image} has no python3: set sandbox.image to an image with Python 3.9 or newer.`
        : `A hardened sandbox container does not start with ${name}: ${tail || 'no error output'}. ` +
            "Check sandbox.extraRunArgs and the runtime's own configuration.",
    );
    status.fixes.push({
      kind: 'setting',
      label: noPython ? 'Change the sandbox image' : 'Review extra run arguments',
      setting: noPython ? 'sandbox.image' : 'sandbox.extraRunArgs',
    });
  }
  return status;
}

/**
 * The runtime a first sandbox may start on while the checks run, when their answer can only
 * confirm it or refuse it: the first candidate as located, on podman in a user namespace of its
 * own. None when a workspace, packages or an OCI runtime decide the start and are checked first.
 */
export function firstStartGuess(sandbox: SandboxConfig, options: DetectOptions = {}): RuntimeRef | undefined {
  const name = candidates(sandbox)[0];
  if (!name || workspaceRequested(sandbox) || sandbox.packages.length > 0 || sandbox.ociRuntime !== undefined) return undefined;
  return {
    name,
    command: locate(name, options, sandbox).command,
    ownUserNamespace: name === 'podman',
    ...(options.stateDir ? { stateDir: options.stateDir } : {}),
  };
}

/** Whether a sandbox started on the guess is the one the checks' answer would start. */
export function guessConfirmed(guess: RuntimeRef, status: RuntimeStatus): boolean {
  return (
    guess.name === status.name &&
    guess.command === status.command &&
    guess.ownUserNamespace === firstStartOwnNamespace(status) &&
    status.image === undefined &&
    status.ociRuntime === undefined
  );
}

/** Whether a first sandbox tries a user namespace of its own, as the probe does first (probeIsolated). */
export function firstStartOwnNamespace(status: RuntimeStatus): boolean {
  return status.name === 'podman' && !status.isolation;
}

/**
 * Records a hardened start proven by the caller's own first sandbox (checked with skipStart) as
 * the probe records its own: the start check, Python's version, the isolation it had.
 */
export function startProven(status: RuntimeStatus, pythonVersion: string, ownUserNamespace: boolean): void {
  if (ownUserNamespace) status.isolation = ISOLATED;
  status.python = pythonVersion.split('.').slice(0, 2).join('.');
  status.checks.push({ name: 'start', ok: true, detail: `a hardened sandbox starts (Python ${status.python})` });
  noteIsolation(status);
}

/**
 * Runs the probe, on podman first in a user namespace of its own (unless the user's ids are known
 * to be too few). When podman cannot give it one (no subordinate ids, say), again without: the
 * sandbox still runs, and the report says how far apart sandboxes are.
 */
async function probeIsolated(status: RuntimeStatus, probe: (ownUserNamespace: boolean) => Promise<CliResult>): Promise<CliResult> {
  if (status.name !== 'podman' || status.isolation) return probe(false);
  try {
    const out = await probe(true);
    status.isolation = ISOLATED;
    return out;
  } catch (error) {
    if (!(error instanceof CliError) || !USERNS_FAILURE.test(error.stderr)) throw error;
    status.isolation = podmanUsernsUnavailable(status.rootless ?? false, error.stderr);
    return probe(false);
  }
}

/** The isolation check: passed with a namespace per sandbox, failed (with its fix) when they share a uid. */
function noteIsolation(status: RuntimeStatus): void {
  const isolation = status.isolation;
  if (!isolation) return;
  status.ownUserNamespace = isolation.ownUserNamespace;
  status.checks.push({ name: 'isolation', ok: isolation.ownUserNamespace, detail: isolation.detail });
  if (isolation.problem) status.problems.push(isolation.problem);
  const fix = isolation.fix;
  if (fix) status.fixes.push({ kind: fix.setting ? 'setting' : 'docs', ...fix });
}

/** Checks sandbox.ociRuntime with the runtime (a failed check is reported with its fix); true when found. */
async function ociRuntimeFound(
  status: RuntimeStatus,
  ociRuntime: string,
  cli: { timeoutMs: number; env?: NodeJS.ProcessEnv },
): Promise<boolean> {
  const found: OciRuntimeFinding =
    status.name === 'podman'
      ? await checkPodmanOciRuntime(status.command, ociRuntime, cli)
      : checkDockerOciRuntime(status.registeredOciRuntimes, ociRuntime);
  status.checks.push({ name: 'oci-runtime', ok: found.ok, detail: found.detail });
  if (found.ok) {
    if (found.argument) status.ociRuntime = found.argument;
    return true;
  }
  status.state = 'start-failed';
  if (found.problem) status.problems.push(found.problem);
  status.fixes.push(
    found.fix?.command
      ? { kind: 'install', label: found.fix.label, command: found.fix.command }
      : { kind: 'setting', label: found.fix?.label ?? 'Change the OCI runtime', setting: 'sandbox.ociRuntime' },
  );
  return false;
}

/**
 * Start failures with a known cause, named with their fix: limits the runtime may not set (the
 * host's hard limits are lower, e.g. a daemon's), and gVisor without its network off under Docker.
 */
function explainStartFailure(status: RuntimeStatus, sandbox: SandboxConfig, stderr: string, tail: string, remote?: string): boolean {
  const limit = rlimitFailure(stderr);
  if (limit) {
    const wanted = sandboxUlimits(sandbox, engineHardLimits(remote !== undefined));
    const which =
      limit === 'nofile'
        ? `open files (nofile ${wanted.nofile})`
        : limit === 'nproc'
          ? `processes (nproc ${wanted.nproc})`
          : 'open files or processes';
    status.state = 'start-failed';
    status.checks.push({ name: 'start', ok: false, detail: `${status.name} may not set the sandbox's limit of ${which}: ${tail}` });
    status.problems.push(
      `${status.name} cannot set the sandbox's limit of ${which}: it is above the hard limit of ${remote ? `the remote engine (${remote})` : status.name === 'docker' ? 'the Docker daemon' : 'this process'}. ` +
        `Raise that hard limit (\`ulimit -H\`, LimitNOFILE=/LimitNPROC= of the service), or set a lower one in sandbox.extraRunArgs (e.g. ["--ulimit", "nofile=256:256"]), ` +
        'which the sandbox then uses instead of its own.',
    );
    status.fixes.push({ kind: 'setting', label: "Set the sandbox's limits", setting: 'sandbox.extraRunArgs' });
    return true;
  }
  if (status.name === 'docker' && sandbox.ociRuntime !== undefined && gvisorNetworkFailure(stderr)) {
    status.state = 'start-failed';
    status.checks.push({ name: 'start', ok: false, detail: `gVisor's own network is on: ${tail}` });
    status.problems.push(
      `gVisor does not start under docker with its network on: register it with its network off in daemon.json (${dockerRegistration(sandbox.ociRuntime)}), ` +
        'then reload the daemon (`sudo systemctl reload docker`).',
    );
    status.fixes.push({
      kind: 'docs',
      label: 'Register gVisor with the docker daemon',
      url: 'https://gvisor.dev/docs/user_guide/quick_start/docker/',
    });
    return true;
  }
  return false;
}

export interface SandboxReport {
  image: string;
  /** The runtime the sandbox uses (the first usable one), if any. */
  chosen?: RuntimeStatus;
  /** Every candidate checked, in order. */
  runtimes: RuntimeStatus[];
  /** sandbox.backend, as configured. */
  backend?: SandboxBackend;
  /** The WebAssembly sandbox, when the backend may use it ("wasm", or "auto" without a usable runtime). */
  wasm?: WasmStatus;
}

/** Which sandbox runs use, as the report found: a container, WebAssembly, or none. */
export function reportUses(report: SandboxReport): 'container' | 'wasm' | undefined {
  if (report.chosen) return 'container';
  return report.wasm?.ready ? 'wasm' : undefined;
}

/** The candidates a configuration allows, in order. */
export function candidates(config: Pick<SandboxConfig, 'runtime' | 'runtimeOrder'>): RuntimeName[] {
  return config.runtime === 'auto' ? config.runtimeOrder : [config.runtime];
}

/** Checks candidates in order; `all` keeps going after the first usable one (for reports). */
export async function checkSandbox(sandbox: SandboxConfig, options: DetectOptions & { all?: boolean } = {}): Promise<SandboxReport> {
  const backend = sandbox.backend;
  if (backend === 'wasm') return { image: sandbox.image, runtimes: [], backend, wasm: wasmNetworkNote(await checkWasm(), sandbox) };
  const containers = await checkContainers(sandbox, options);
  if (backend === 'container' || containers.chosen) return { ...containers, backend };
  return { ...containers, backend, wasm: wasmNetworkNote(await checkWasm(), sandbox) };
}

/** Said where a sandbox with sandbox.network set gets no network: a remote engine's, an engine in a VM, or WebAssembly. */
export function noNetworkText(where: (ProxyOutOfReach & { runtime: string }) | 'wasm'): string {
  if (where === 'wasm')
    return 'sandbox.network is set, but the WebAssembly sandbox has no network at all: only a container sandbox reaches the hosts it lists.';
  if ('vm' in where)
    return (
      `sandbox.network is set, but the sandbox's network needs an engine that runs containers on this machine's kernel; ${where.vm} runs them in a VM, ` +
      "whose file sharing cannot carry the network proxy's socket, so the sandbox has no network. For a network, use Docker Engine or rootless Podman installed on Linux itself " +
      '(on Windows, inside WSL 2, with the bridge running there too).'
    );
  return `sandbox.network is set, but ${where.runtime} talks to a remote engine (${where.remote}): it cannot mount this machine's network proxy, so the sandbox has no network.`;
}

/**
 * sandbox.network on a container engine: through the bridge's proxy, or none on a remote engine
 * (said like the workspace) or on one that runs containers in a VM (`status.vm`).
 */
export function noteNetwork(status: RuntimeStatus, sandbox: SandboxConfig, remote: string | undefined): void {
  if (!networkEnabled(sandbox)) return;
  if (!remote && status.vm) {
    status.checks.push({
      name: 'network',
      ok: false,
      detail: `none: ${status.name} runs containers in a VM (${status.vm}), which cannot reach this machine's proxy socket`,
    });
    status.problems.push(noNetworkText({ vm: status.vm, runtime: status.name }));
    return;
  }
  if (remote) {
    status.checks.push({
      name: 'network',
      ok: false,
      detail: `none: ${status.name} runs on another machine (${remote}), which cannot reach this machine's proxy`,
    });
    status.problems.push(noNetworkText({ remote, runtime: status.name }));
    return;
  }
  const listed = sandbox.network.allow.length;
  const hosts = `${listed} host${listed === 1 ? '' : 's'} listed`;
  status.checks.push({
    name: 'network',
    ok: true,
    detail: `through the bridge's proxy only (the container has no network interface): ${hosts}${sandbox.network.ask ? ', others asked' : ''}`,
  });
}

/** The WebAssembly sandbox says it has no network when sandbox.network asks for one. */
function wasmNetworkNote(wasm: WasmStatus, sandbox: SandboxConfig): WasmStatus {
  return networkEnabled(sandbox) && wasm.ready ? { ...wasm, detail: `${wasm.detail}; no network, whatever sandbox.network allows` } : wasm;
}

/**
 * The status bar's check: a local podman's kept `info` may be read back (the check's own
 * container start proves the engine answers, and podman's `info` costs a third of a second
 * of CPU). A runtime that read it and is not ready is checked again with podman asked, so that
 * what is wrong is never an old answer; a missing image is not `info`'s to say.
 */
export async function checkSandboxKept(sandbox: SandboxConfig, options: DetectOptions & { all?: boolean } = {}): Promise<SandboxReport> {
  const report = await checkSandbox(sandbox, { ...options, cachedInfo: true });
  const doubtful = report.runtimes.some((s) => readKeptInfo.has(s) && s.state !== 'ready' && s.state !== 'image-missing');
  return doubtful ? checkSandbox(sandbox, { ...options, cachedInfo: false }) : report;
}

/** The container runtimes, in order; `all` keeps going after the first usable one. */
async function checkContainers(sandbox: SandboxConfig, options: DetectOptions & { all?: boolean }): Promise<SandboxReport> {
  const runtimes: RuntimeStatus[] = [];
  let chosen: RuntimeStatus | undefined;
  for (const name of candidates(sandbox)) {
    const status = await checkRuntime(name, sandbox, options);
    runtimes.push(status);
    if (isUsable(status) && !chosen) {
      chosen = status;
      if (!options.all) break;
    }
  }
  return { image: sandbox.image, runtimes, ...(chosen ? { chosen } : {}) };
}

/**
 * Picks the runtime to use: the pinned one, or the first in `runtimeOrder` that can really run
 * a sandbox. When the only thing missing is the image, throws ImageMissingError (the fix is a
 * pull); otherwise RuntimeUnavailableError listing what was tried and why each failed.
 */
export async function selectRuntime(sandbox: SandboxConfig, options: DetectOptions = {}, pullHint?: string): Promise<RuntimeStatus> {
  const report = await checkContainers(sandbox, options);
  if (report.chosen) return report.chosen;
  const needsImage = report.runtimes.find((s) => s.state === 'image-missing');
  if (needsImage) throw new ImageMissingError(sandbox.image, needsImage.name, pullHint);
  throw new RuntimeUnavailableError(describeUnavailable(sandbox, report.runtimes));
}

/** The runtime a pull should go to: the first that can run a sandbox except for the image. */
export async function runtimeForPull(sandbox: SandboxConfig, options: DetectOptions = {}): Promise<RuntimeStatus> {
  const report = await checkContainers(sandbox, options);
  const target = report.chosen ?? report.runtimes.find((s) => s.state === 'image-missing');
  if (target) return target;
  throw new RuntimeUnavailableError(describeUnavailable(sandbox, report.runtimes));
}

function describeUnavailable(sandbox: SandboxConfig, tried: RuntimeStatus[]): string {
  const reasons = tried.map((s) => `- ${s.name}: ${s.problems.join(' ')}`).join('\n');
  return (
    `No container runtime can run the sandbox (tried ${candidates(sandbox).join(', ')}):\n${reasons}\n` +
    'Install Podman (recommended) or Docker, or set sandbox.runtime to one that works here.'
  );
}

/** The workspace on a remote engine: the snapshot each start copies in, as it would be now, or why it is refused (runs go on without it). */
function noteSnapshot(status: RuntimeStatus, name: RuntimeName, remote: string, listing: unknown): void {
  if (listing instanceof SnapshotRefusedError) {
    status.checks.push({ name: 'workspace', ok: false, detail: listing.message });
    status.problems.push(listing.message);
    return;
  }
  if (listing instanceof Error) throw listing;
  status.checks.push({
    name: 'workspace',
    ok: true,
    detail: `copied in, not mounted (${name} talks to a remote engine, ${remote}, which cannot mount this machine's folders): ${snapshotText(listing as SnapshotListing)}; taken again at each sandbox start and reset, and by refresh_workspace()`,
  });
}

// Finds a usable container runtime: installed, answering, and whether it really enforces
// resource limits (rootless podman on cgroups v1 silently ignores them). Lazy and cached by
// the caller; a missing runtime is an explained error, never a crash.
import { z } from 'zod';
import type { RuntimeName, SandboxConfig } from '../../config/schema.ts';
import { RuntimeUnavailableError } from '../errors.ts';
import { CliError, runCli } from './cli.ts';
import { infoArgs, versionArgs } from './commands.ts';

export type RuntimeState = 'ready' | 'limits-not-enforced' | 'daemon-down' | 'not-installed';

export interface RuntimeStatus {
  name: RuntimeName;
  /** The command run for this runtime (the name on PATH unless overridden). */
  command: string;
  state: RuntimeState;
  version?: string;
  rootless?: boolean;
  cgroupVersion?: string;
  /** Plain-language problems and what to do about them. */
  problems: string[];
}

/** Whether the runtime can run the sandbox (limits not enforced still runs, with a warning). */
export function isUsable(status: RuntimeStatus): boolean {
  return status.state === 'ready' || status.state === 'limits-not-enforced';
}

const podmanInfoSchema = z.object({
  host: z.object({
    cgroupVersion: z.string().optional(),
    security: z.object({ rootless: z.boolean().optional() }).optional(),
  }),
  version: z.object({ Version: z.string() }).optional(),
});

const dockerInfoSchema = z.object({
  ServerVersion: z.string().optional(),
  CgroupVersion: z.string().optional(),
  MemoryLimit: z.boolean().optional(),
  PidsLimit: z.boolean().optional(),
  SecurityOptions: z.array(z.string()).nullable().optional(),
});

const podmanVersionSchema = z.object({ Client: z.object({ Version: z.string() }) });
const dockerVersionSchema = z.object({ Client: z.object({ Version: z.string() }) });

export interface DetectOptions {
  /** Commands to run for each runtime, e.g. a full path. Default: the runtime's name. */
  commands?: Partial<Record<RuntimeName, string>>;
  timeoutMs?: number;
}

export async function probeRuntime(name: RuntimeName, options: DetectOptions = {}): Promise<RuntimeStatus> {
  const command = options.commands?.[name] ?? name;
  const timeoutMs = options.timeoutMs ?? 20_000;
  const status: RuntimeStatus = { name, command, state: 'not-installed', problems: [] };
  try {
    const out = await runCli(command, versionArgs(name), { timeoutMs });
    const parsed = (name === 'podman' ? podmanVersionSchema : dockerVersionSchema).safeParse(JSON.parse(out.stdout));
    if (parsed.success) status.version = parsed.data.Client.Version;
  } catch (error) {
    if (error instanceof CliError && error.notFound) {
      status.problems.push(`${name} is not installed (no \`${command}\` on PATH).`);
      return status;
    }
    // `docker version` fails when the daemon is down but still names the client: go on to info.
  }
  try {
    const out = await runCli(command, infoArgs(name), { timeoutMs });
    const info: unknown = JSON.parse(out.stdout);
    if (name === 'podman') readPodmanInfo(info, status);
    else readDockerInfo(info, status);
  } catch (error) {
    status.state = 'daemon-down';
    const detail = error instanceof Error ? error.message : String(error);
    status.problems.push(
      name === 'docker'
        ? `The Docker daemon does not answer: start Docker (or Docker Desktop). ${detail}`
        : `Podman does not answer: on macOS and Windows start the machine with \`podman machine start\`. ${detail}`,
    );
  }
  return status;
}

function readPodmanInfo(raw: unknown, status: RuntimeStatus): void {
  const info = podmanInfoSchema.parse(raw);
  status.rootless = info.host.security?.rootless ?? false;
  status.cgroupVersion = info.host.cgroupVersion;
  if (info.version?.Version) status.version = info.version.Version;
  status.state = 'ready';
  if (status.rootless && status.cgroupVersion === 'v1') {
    status.state = 'limits-not-enforced';
    status.problems.push(
      'Rootless Podman on cgroups v1 ignores memory, CPU and process limits: sandboxed code could exhaust ' +
        'this machine. Switch the host to cgroups v2 (systemd.unified_cgroup_hierarchy=1) or use rootful Podman or Docker.',
    );
  }
}

function readDockerInfo(raw: unknown, status: RuntimeStatus): void {
  const info = dockerInfoSchema.parse(raw);
  status.rootless = (info.SecurityOptions ?? []).some((o) => o.includes('name=rootless'));
  status.cgroupVersion = info.CgroupVersion ? `v${info.CgroupVersion.replace(/^v/, '')}` : undefined;
  if (info.ServerVersion) status.version = info.ServerVersion;
  status.state = 'ready';
  const missing = [info.MemoryLimit === false ? 'memory' : '', info.PidsLimit === false ? 'process' : ''].filter(Boolean);
  if (missing.length > 0 || (status.rootless && status.cgroupVersion === 'v1')) {
    status.state = 'limits-not-enforced';
    status.problems.push(
      `Docker does not enforce ${missing.length > 0 ? missing.join(' and ') : 'resource'} limits on this host: ` +
        'sandboxed code could exhaust this machine. Enable cgroup memory/pids controllers or use cgroups v2.',
    );
  }
}

/**
 * Picks the runtime to use: the pinned one, or the first usable one in `runtimeOrder`.
 * Throws RuntimeUnavailableError listing what was tried and why each failed.
 */
export async function selectRuntime(
  config: Pick<SandboxConfig, 'runtime' | 'runtimeOrder'>,
  options: DetectOptions = {},
): Promise<RuntimeStatus> {
  const candidates = config.runtime === 'auto' ? config.runtimeOrder : [config.runtime];
  const tried: RuntimeStatus[] = [];
  for (const name of candidates) {
    const status = await probeRuntime(name, options);
    if (isUsable(status)) return status;
    tried.push(status);
  }
  const reasons = tried.map((s) => `- ${s.name}: ${s.problems.join(' ')}`).join('\n');
  throw new RuntimeUnavailableError(
    `No container runtime is usable for the sandbox (tried ${candidates.join(', ')}):\n${reasons}\n` +
      'Install Podman (recommended) or Docker, or set sandbox.runtime to one that is installed.',
  );
}

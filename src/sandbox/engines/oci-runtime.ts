// sandbox.ociRuntime: the OCI runtime the containers run under, e.g. gVisor's `runsc`, whose
// user-space kernel stands between sandboxed code and the host's. Podman takes a name (looked up
// in its containers.conf) or a path per container; Docker only names its daemon has registered.
// The hardening flags stay the same whichever runtime runs them.
import { posix } from 'node:path';
import { z } from 'zod';
import type { RuntimeName } from '../../config/schema.ts';
import { CliError, runCli } from './cli.ts';

const GVISOR = 'runsc';

/** Whether the configured OCI runtime is gVisor's (its name, or a path to it). */
export function isGvisor(ociRuntime: string | undefined): boolean {
  return ociRuntime !== undefined && posix.basename(ociRuntime) === GVISOR;
}

/**
 * `run` options for the OCI runtime (none when unset). gVisor runs with its own network stack
 * off: with podman's `--network none` alone it refuses to start ("cannot run with network
 * enabled in root network namespace"). Not `oci-seccomp`: gVisor then refuses `select` to
 * Python. Inside gVisor, the kernel's own seccomp filter still applies; the runtime's profile
 * would guard the host kernel, which gVisor's code, under its own filter, stands in front of.
 * Docker takes no per-container runtime flags: its daemon's registration carries them.
 */
export function ociRuntimeArgs(runtime: RuntimeName, ociRuntime: string | undefined): string[] {
  if (ociRuntime === undefined) return [];
  const flags = runtime === 'podman' && isGvisor(ociRuntime) ? ['--runtime-flag', 'network=none'] : [];
  return ['--runtime', ociRuntime, ...flags];
}

/** What to add to Docker's daemon.json for an OCI runtime. */
export function dockerRegistration(ociRuntime: string): string {
  const name = posix.basename(ociRuntime);
  const path = posix.isAbsolute(ociRuntime) ? ociRuntime : `/usr/bin/${name}`;
  const runtimeArgs = isGvisor(ociRuntime) ? ', "runtimeArgs": ["--network=none"]' : '';
  return `{"runtimes": {"${name}": {"path": "${path}"${runtimeArgs}}}}`;
}

/** What a check of the OCI runtime found. */
export interface OciRuntimeFinding {
  ok: boolean;
  detail: string;
  /** What to pass to `--runtime` (Docker: the registered name, also when the setting is a path). */
  argument?: string;
  problem?: string;
  fix?: { label: string; command?: string };
}

const podmanRuntimeSchema = z.object({
  host: z.object({ ociRuntime: z.object({ name: z.string(), path: z.string().optional(), version: z.string().optional() }) }),
});
const dockerRuntimesSchema = z.record(
  z.string(),
  z.object({ path: z.string().optional(), runtimeArgs: z.array(z.string()).nullable().optional() }),
);

const INSTALL_HINT = 'Debian/Ubuntu: `sudo apt-get install runsc`; elsewhere see https://gvisor.dev/docs/user_guide/install/';

/** Podman: asks it which runtime the name resolves to (`podman --runtime X info`). */
export async function checkPodmanOciRuntime(
  command: string,
  ociRuntime: string,
  cli: { timeoutMs: number; env?: NodeJS.ProcessEnv },
): Promise<OciRuntimeFinding> {
  try {
    const out = await runCli(command, ['--runtime', ociRuntime, 'info', '--format', 'json'], cli);
    const found = podmanRuntimeSchema.parse(JSON.parse(out.stdout)).host.ociRuntime;
    const version = found.version?.split('\n')[0]?.trim();
    return {
      ok: true,
      argument: ociRuntime,
      detail: `${found.path ?? found.name}${version ? ` (${version})` : ''}${isGvisor(ociRuntime) ? ': gVisor, a user-space kernel' : ''}`,
    };
  } catch (error) {
    const why = error instanceof CliError ? (error.stderr.trim().split('\n').pop() ?? '') : String(error);
    return {
      ok: false,
      detail: `podman cannot find the OCI runtime "${ociRuntime}"${why ? ` (${why.slice(0, 300)})` : ''}`,
      problem:
        `sandbox.ociRuntime is "${ociRuntime}", but podman cannot find it: install it` +
        (isGvisor(ociRuntime) ? ` (${INSTALL_HINT})` : '') +
        ", set sandbox.ociRuntime to its full path, or clear the setting to use podman's default runtime.",
      ...(isGvisor(ociRuntime)
        ? { fix: { label: 'Install gVisor (runsc)', command: 'sudo apt-get install runsc' } }
        : { fix: { label: 'Change the OCI runtime' } }),
    };
  }
}

/** Docker: the runtime must be registered with the daemon (`docker info` lists them). */
export function checkDockerOciRuntime(runtimes: unknown, ociRuntime: string): OciRuntimeFinding {
  const parsed = dockerRuntimesSchema.safeParse(runtimes ?? {});
  const registered = parsed.success ? parsed.data : {};
  const byName = Object.hasOwn(registered, ociRuntime) ? ociRuntime : undefined;
  const byPath = posix.isAbsolute(ociRuntime) ? Object.keys(registered).find((name) => registered[name]?.path === ociRuntime) : undefined;
  const name = byName ?? byPath;
  if (name) {
    const entry = registered[name];
    return {
      ok: true,
      argument: name,
      detail: `registered as "${name}"${entry?.path ? ` (${entry.path})` : ''}${isGvisor(ociRuntime) ? ': gVisor, a user-space kernel' : ''}`,
    };
  }
  const shown = posix.basename(ociRuntime);
  return {
    ok: false,
    detail: `${shown} is not registered with the docker daemon`,
    problem:
      `${shown} is not registered with the docker daemon: add it to daemon.json (${dockerRegistration(ociRuntime)}), ` +
      'then reload the daemon (`sudo systemctl reload docker`) or restart Docker Desktop; or use podman, which needs no registration.',
    fix: { label: `Register ${shown} with the docker daemon` },
  };
}

/** A start that failed for gVisor's network setup: the Docker registration lacks `--network=none`. */
export function gvisorNetworkFailure(stderr: string): boolean {
  return /cannot run with network enabled/i.test(stderr);
}

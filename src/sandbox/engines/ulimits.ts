// The sandbox's own open-file and process limits (`--ulimit`), so that it never inherits the
// runtime's defaults: podman's are above the hard limits of many hosts (CI runners, dev
// containers, systemd services), where no container would start at all. Each is clamped to the
// hard limit of this process, which the runtime's CLI inherits (a runtime cannot raise it); not on
// a remote engine, whose limits are another machine's.
import { readFileSync } from 'node:fs';
import type { SandboxConfig } from '../../config/schema.ts';

/** Open files per sandbox process: what most Linux hosts give a process by default. */
const SANDBOX_NOFILE = 1024;
/** The least process limit: ordinary threads and subprocesses of every sandbox together. */
const MIN_SANDBOX_NPROC = 4096;

export type UlimitName = 'nofile' | 'nproc';

/** Hard limits of this process; absent when unlimited or unknown. */
export interface HostLimits {
  nofile?: number;
  nproc?: number;
}

const LIMIT_ROWS: Record<string, UlimitName> = { 'Max open files': 'nofile', 'Max processes': 'nproc' };

/** Reads the hard limits out of /proc/<pid>/limits text (Linux); "unlimited" counts as none. */
export function parseProcLimits(text: string): HostLimits {
  const limits: HostLimits = {};
  for (const line of text.split('\n')) {
    const match = /^(Max [a-z ]+?)\s{2,}(\S+)\s+(\S+)/.exec(line);
    const name = match && LIMIT_ROWS[match[1]!];
    if (!name) continue;
    const hard = Number(match[3]);
    if (Number.isSafeInteger(hard) && hard > 0) limits[name] = hard;
  }
  return limits;
}

let cached: HostLimits | undefined;

/**
 * This process's hard limits. Node has no getrlimit: on Linux they come from /proc/self/limits;
 * elsewhere (macOS, Windows) the containers run in a Linux VM whose limits are not this
 * process's, and the defaults above are within what such a VM gives.
 */
export function hostHardLimits(): HostLimits {
  if (cached) return cached;
  try {
    cached = process.platform === 'linux' ? parseProcLimits(readFileSync('/proc/self/limits', 'utf8')) : {};
  } catch {
    cached = {};
  }
  return cached;
}

/**
 * The hard limits a sandbox's are clamped to: this process's for a local engine; none for a
 * remote one, where this machine's limits mean nothing (the configured values go as they are, and
 * an engine that refuses them says so at the start, see rlimitFailure).
 */
export function engineHardLimits(remote: boolean): HostLimits {
  return remote ? {} : hostHardLimits();
}

/**
 * The limits a sandbox gets. RLIMIT_NPROC counts every process of the user id, and all
 * sandboxes run as the same one: a limit near one sandbox's `pids` would let one sandbox's
 * processes starve the others' (the pids cgroup limits each sandbox on its own). So it leaves
 * room for every session and the spare, and never less than MIN_SANDBOX_NPROC.
 */
export function sandboxUlimits(config: Pick<SandboxConfig, 'pids' | 'maxSessions'>, host: HostLimits): Record<UlimitName, number> {
  const clamp = (wanted: number, hard: number | undefined) => (hard === undefined ? wanted : Math.min(wanted, hard));
  return {
    nofile: clamp(SANDBOX_NOFILE, host.nofile),
    nproc: clamp(Math.max(MIN_SANDBOX_NPROC, config.pids * (config.maxSessions + 1)), host.nproc),
  };
}

/** The limits a `--ulimit` in extraRunArgs sets itself (that value is used instead of ours). */
function ulimitsInExtraArgs(extraRunArgs: readonly string[]): Set<string> {
  const named = new Set<string>();
  for (let i = 0; i < extraRunArgs.length; i++) {
    const token = extraRunArgs[i]!;
    const value = token.startsWith('--ulimit=') ? token.slice('--ulimit='.length) : token === '--ulimit' ? extraRunArgs[++i] : undefined;
    if (value) named.add(value.split('=')[0]!);
  }
  return named;
}

/**
 * `--ulimit` arguments for both limits (soft = hard). Both are always given: with any
 * `--ulimit`, podman drops the defaults of its containers.conf for the rest.
 */
export function ulimitArgs(config: Pick<SandboxConfig, 'pids' | 'maxSessions' | 'extraRunArgs'>, host: HostLimits): string[] {
  const own = ulimitsInExtraArgs(config.extraRunArgs);
  return Object.entries(sandboxUlimits(config, host)).flatMap(([name, value]) =>
    own.has(name) ? [] : ['--ulimit', `${name}=${value}:${value}`],
  );
}

/** Which limit a failed start could not set, from the OCI runtime's error (runc, crun, runsc). */
export function rlimitFailure(stderr: string): UlimitName | 'unknown' | undefined {
  if (!/rlimit/i.test(stderr)) return undefined;
  // runc names the type by number: 6 is RLIMIT_NPROC, 7 RLIMIT_NOFILE on Linux.
  if (/rlimit type 7|RLIMIT_NOFILE/i.test(stderr)) return 'nofile';
  if (/rlimit type 6|RLIMIT_NPROC/i.test(stderr)) return 'nproc';
  return /setrlimit|setting rlimit/i.test(stderr) ? 'unknown' : undefined;
}

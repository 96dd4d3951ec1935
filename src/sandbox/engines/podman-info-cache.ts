// `podman info` costs about a quarter of a second of CPU (it asks the package manager for the
// versions of conmon and the OCI runtime), and a bridge asks it at every start. What the checks
// read from it (rootless, ID mappings, cgroups version, version, default OCI runtime) changes only
// with podman's binary, its configuration files, the user's ID ranges, the user or a reboot. So
// a local podman's answer is kept in the user's private cache folder under a key made of exactly
// those, for at most CACHE_MS; anything else (another machine, a file that cannot be read) asks
// podman again.
import { createHash } from 'node:crypto';
import { readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { z } from 'zod';
import { cacheDir, privateFolder } from '../../shared/cache-dir.ts';

/** How long an answer is kept at most, whatever the key says. */
export const CACHE_MS = 30 * 60_000;
const FILE = 'podman-info.json';
const MAX_CACHED_CHARS = 1_000_000;

const cachedSchema = z.object({ key: z.string(), at: z.number(), stdout: z.string().max(MAX_CACHED_CHARS) });

/** The files whose change can change what `podman info` says (containers.conf and its drop-ins, storage.conf, ID ranges). */
function watchedFiles(env: NodeJS.ProcessEnv): string[] {
  const config = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config');
  return [
    ...['/usr/share/containers', '/etc/containers', join(config, 'containers')].flatMap((dir) => [
      join(dir, 'containers.conf'),
      join(dir, 'containers.conf.d'),
      join(dir, 'storage.conf'),
      join(dir, 'podman-connections.json'),
    ]),
    '/etc/subuid',
    '/etc/subgid',
    ...[env.CONTAINERS_CONF, env.CONTAINERS_CONF_OVERRIDE, env.CONTAINERS_STORAGE_CONF].filter((f): f is string => Boolean(f)),
  ];
}

function fileStamp(path: string): string {
  try {
    const stat = statSync(path);
    return `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}`;
  } catch {
    return 'none';
  }
}

/**
 * The key of a local podman's answer, or undefined where none is kept: not Linux (podman runs
 * in a VM there), a podman chosen by name on PATH rather than by path, or CONTAINER_HOST or
 * CONTAINER_CONNECTION set (another machine).
 */
export function podmanInfoKey(command: string, env: NodeJS.ProcessEnv, platform: NodeJS.Platform = process.platform): string | undefined {
  if (platform !== 'linux' || !isAbsolute(command) || env.CONTAINER_HOST || env.CONTAINER_CONNECTION) return undefined;
  try {
    const binary = realpathSync(command);
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const parts = {
      binary,
      stamp: fileStamp(binary),
      uid: process.getuid?.(),
      boot,
      env: [env.HOME, env.XDG_CONFIG_HOME, env.XDG_RUNTIME_DIR, env.CONTAINERS_CONF, env.CONTAINERS_STORAGE_CONF],
      files: watchedFiles(env).map((file) => [file, fileStamp(file)]),
    };
    return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
  } catch {
    return undefined;
  }
}

/** The kept answer for `key`, when there is one younger than CACHE_MS in a private cache folder. */
export function keptPodmanInfo(key: string, env: NodeJS.ProcessEnv = process.env, now = Date.now()): string | undefined {
  const dir = cacheDir(env);
  if (!privateFolder(dir).ok) return undefined;
  try {
    const kept = cachedSchema.safeParse(JSON.parse(readFileSync(join(dir, FILE), 'utf8')));
    if (!kept.success || kept.data.key !== key || kept.data.at > now || now - kept.data.at > CACHE_MS) return undefined;
    return kept.data.stdout;
  } catch {
    return undefined;
  }
}

/** Keeps podman's answer for `key` (owner-only, replaced whole); quietly nothing where it cannot be kept. */
export function keepPodmanInfo(key: string, stdout: string, env: NodeJS.ProcessEnv = process.env, now = Date.now()): void {
  // Only an answer that reads (a JSON object): a garbled one is asked again next time, not kept for half an hour.
  if (stdout.length > MAX_CACHED_CHARS || !isJsonObject(stdout)) return;
  const dir = cacheDir(env);
  if (!privateFolder(dir).ok) return;
  const file = join(dir, FILE);
  const partial = `${file}.${process.pid}.partial`;
  try {
    writeFileSync(partial, JSON.stringify({ key, at: now, stdout }), { mode: 0o600 });
    renameSync(partial, file);
  } catch {
    // Not kept: the next start asks podman, as without a cache.
  }
}

function isJsonObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}

/** Forgets the kept answer: a start it vouched for failed, so the next checks ask podman. */
export function forgetPodmanInfo(env: NodeJS.ProcessEnv = process.env): void {
  rmSync(join(cacheDir(env), FILE), { force: true });
}

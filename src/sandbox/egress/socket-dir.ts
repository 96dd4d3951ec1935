// Where a container's egress socket lives on the host: one private folder per container, bind-mounted
// into it at EGRESS_MOUNT, holding the socket the egress proxy listens on. The folders sit in a
// per-user folder of the OS temp dir (mode 0700: other local users cannot reach a socket through
// it; the container sees only its own folder, through the mount): a short path keeps the socket
// within the 104-byte limit of a unix socket's address on every platform, whatever the state dir's
// length or characters, and a reboot empties it. Each folder is named `<pid>-<random>`, so that the
// leftovers of a bridge that crashed are swept (container/cleanup.ts), and this process's at exit.
import { mkdirSync, readdirSync, rmSync, lstatSync, chmodSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import type { SandboxConfig } from '../../config/schema.ts';
import { processAlive } from '../../shared/process-alive.ts';
import { parseNetworkPattern } from '../../config/network-patterns.ts';

/** Where the folder appears in the container (read-only: connecting to a socket needs no write). */
export const EGRESS_MOUNT = '/run/cem-net';
/** The socket's name in the folder (the kernel's egress.py looks for it there). */
export const EGRESS_SOCKET = 'egress.sock';

/** Whether sandbox.network lets anything through: a listed host, or asking about others. */
export function networkEnabled(config: SandboxConfig): boolean {
  return config.network.allow.length > 0 || config.network.ask;
}

/**
 * Beside the socket when sandbox.network lists the package index (its content: the index URL to
 * give pip, empty for pip's default): the kernel's import errors then say that pip can install
 * into the session.
 */
export const PIP_INDEX_FILE = 'pip-index';

/** Whether `host:port` is listed in sandbox.network.allow (a listing, not the proxy's decision). */
function listed(config: SandboxConfig, host: string, port: number): boolean {
  return config.network.allow.some((text) => {
    const pattern = parseNetworkPattern(text);
    if (typeof pattern === 'string' || (pattern.port !== undefined && pattern.port !== port)) return false;
    return pattern.wildcard ? host.endsWith(`.${pattern.host}`) : pattern.host === host;
  });
}

/**
 * The index pip reaches through the proxy, as pip is given it ('' for its default, PyPI), when
 * sandbox.network lists its hosts (pypi.org and files.pythonhosted.org, or sandbox.pipIndexUrl's,
 * which carries no credentials: the schema refuses them); else undefined.
 */
export function listedPipIndex(config: SandboxConfig): string | undefined {
  if (!config.pipIndexUrl) return listed(config, 'pypi.org', 443) && listed(config, 'files.pythonhosted.org', 443) ? '' : undefined;
  let url: URL;
  try {
    url = new URL(config.pipIndexUrl);
  } catch {
    return undefined;
  }
  const port = Number(url.port) || (url.protocol === 'http:' ? 80 : 443);
  return listed(config, url.hostname.replace(/^\[|\]$/g, '').toLowerCase(), port) ? config.pipIndexUrl : undefined;
}

/** Writes the pip index marker into a container's folder, when the index is listed. */
export function writePipIndex(dir: string, config: SandboxConfig): void {
  const index = listedPipIndex(config);
  if (index !== undefined) writeFileSync(join(dir, PIP_INDEX_FILE), index, { mode: 0o644 });
}

/** One container's folder and the socket path in it. */
export interface SocketDir {
  dir: string;
  socket: string;
}

/** This process's folders, removed at exit (removeOwnSocketDirsNow). */
const live = new Set<string>();

/** The per-user folder that holds the socket folders; `base` is the OS temp dir unless a test gives another. */
export function socketRoot(base = tmpdir()): string {
  const uid = typeof process.getuid === 'function' ? String(process.getuid()) : userInfo().username.replace(/[^A-Za-z0-9_-]/g, '_');
  return join(base, `cem-net-${uid}`);
}

/** The per-user folder, made private; refused when it is another user's or not a plain folder. */
function privateRoot(base?: string): string {
  const root = socketRoot(base);
  // The container CLIs' mount options split on these.
  if (/[,:"\n\r]/.test(root.replace(/^[A-Za-z]:/, ''))) {
    throw new Error(
      `The temp folder ${root} has ",", ":" or quotes, which a mount cannot name: set TMPDIR to a plain folder for the sandbox's network.`,
    );
  }
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const stat = lstatSync(root);
  const mine = typeof process.getuid !== 'function' || stat.uid === process.getuid();
  if (!stat.isDirectory() || !mine) {
    throw new Error(
      `${root} is not a folder of this user's, so the sandbox's network socket cannot be made private there: remove it and run the code again.`,
    );
  }
  if ((stat.mode & 0o077) !== 0) chmodSync(root, 0o700);
  return root;
}

/**
 * Makes a container's folder (mode 0711: the container's user, whatever its uid, may reach the
 * socket in it, and list nothing) and returns it with the socket's path (not made here).
 */
export function createSocketDir(base?: string): SocketDir {
  const dir = join(privateRoot(base), `${process.pid}-${randomBytes(6).toString('hex')}`);
  mkdirSync(dir, { mode: 0o711 });
  // The process's umask may have taken bits away.
  chmodSync(dir, 0o711);
  live.add(dir);
  return { dir, socket: join(dir, EGRESS_SOCKET) };
}

/** Removes a container's folder and its socket (nothing when already gone). */
export function removeSocketDir(dir: string): void {
  live.delete(dir);
  rmSync(dir, { recursive: true, force: true });
}

/** Last-chance removal of this process's folders at exit. */
export function removeOwnSocketDirsNow(): void {
  for (const dir of [...live]) {
    try {
      removeSocketDir(dir);
    } catch {
      // Swept by the next bridge.
    }
  }
}

/** Removes the folders of processes that no longer run (a crashed bridge's); returns how many. */
export function removeStaleSocketDirs(base?: string): number {
  let names: string[];
  try {
    names = readdirSync(socketRoot(base));
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    const match = /^(\d+)-[0-9a-f]+$/.exec(name);
    if (!match || processAlive(Number(match[1]))) continue;
    try {
      rmSync(join(socketRoot(base), name), { recursive: true, force: true });
      removed++;
    } catch {
      // Another bridge swept it first, or it is not ours to remove.
    }
  }
  return removed;
}

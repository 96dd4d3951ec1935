// The workspace on an engine that does not share this machine's files (a remote one): the
// configured folders copied into the sandbox as a snapshot instead of mounted. Which files (a
// git repository's tracked and untracked files that are not ignored, never `.git`; else every
// file but `.git`), their size against sandbox.workspace.snapshotMaxMB, and the tar the kernel
// extracts into /workspace (kernel/workspace.py), streamed over the frame channel. Regular
// files and folders only: symbolic links, devices and sockets are left out, so nothing outside
// the folders is ever read.
import { execa } from 'execa';
import { constants } from 'node:fs';
import { lstat, open, readdir } from 'node:fs/promises';
import { join, posix, relative, sep } from 'node:path';
import { DEFAULT_SNAPSHOT_MAX_MB, type SandboxConfig } from '../../config/schema.ts';
import { plural } from '../../shared/plural.ts';
import { WORKSPACE_DIR } from '../engines/workspace-names.ts';
import { forbiddenMountDirs, mountsText, resolveWorkspaceMounts, type WorkspaceMount } from '../engines/workspace.ts';
import type { WorkspaceRefresh } from '../protocol/kernel-process.ts';
import type { HostMessage } from '../protocol/messages.ts';
import { archiveEnd, entryHeader, padding, type TarEntry } from './ustar.ts';

const MIB = 1024 * 1024;
/** Bytes of a file read at a time. */
const READ_BYTES = MIB;
/** Bytes of the tar per frame (base64 makes a third more). */
const FRAME_BYTES = MIB;

/** One entry of the snapshot: where its content comes from, for a file. */
export interface SnapshotEntry extends TarEntry {
  source?: string;
}

export interface SnapshotListing {
  /** The host folders, as resolved. */
  folders: string[];
  entries: SnapshotEntry[];
  files: number;
  bytes: number;
  takenAt: Date;
}

/** refresh_workspace() where there is no workspace to refresh, or its folders are gone. */
export class WorkspaceRefreshError extends Error {
  override name = 'WorkspaceRefreshError';
  readonly kind = 'unavailable';
}

/** The snapshot is over sandbox.workspace.snapshotMaxMB: runs go on without /workspace. */
export class SnapshotRefusedError extends Error {
  override name = 'SnapshotRefusedError';
  readonly kind = 'too-large';
}

/** What a snapshot may hold, in bytes (sandbox.workspace.snapshotMaxMB, MB of 1024 × 1024 bytes). */
export function snapshotMaxBytes(config: SandboxConfig): number {
  return (config.workspace?.snapshotMaxMB ?? DEFAULT_SNAPSHOT_MAX_MB) * MIB;
}

/** "12.3 MB" (MB of 1024 × 1024 bytes, as the cap's key counts them). */
export function mbText(bytes: number): string {
  return `${(bytes / MIB).toFixed(1)} MB`;
}

/** "snapshot of /srv/app (120 files, 3.4 MB), taken at 2026-12-02T13:10:05Z". */
export function snapshotText(listing: Pick<SnapshotListing, 'folders' | 'files' | 'bytes' | 'takenAt'>): string {
  const when = listing.takenAt.toISOString().replace(/\.\d+Z$/, 'Z');
  return `snapshot of ${listing.folders.join(', ')} (${plural(listing.files, 'file')}, ${mbText(listing.bytes)}), taken at ${when}`;
}

/**
 * The files of `mounts` (each under its place in /workspace) and their size; throws
 * SnapshotRefusedError, naming the size, the cap and the key, when they hold more than `maxBytes`.
 */
export async function listSnapshot(mounts: readonly WorkspaceMount[], maxBytes: number): Promise<SnapshotListing> {
  const takenAt = new Date();
  const entries: SnapshotEntry[] = [];
  for (const mount of mounts) {
    const prefix = posix.relative(WORKSPACE_DIR, mount.target);
    const found = (await gitFiles(mount.dir)) ?? (await walk(mount.dir));
    entries.push(...(await entriesOf(mount.dir, prefix, found)));
  }
  const files = entries.filter((e) => e.type === 'file');
  const bytes = files.reduce((sum, e) => sum + e.size, 0);
  const listing = { folders: mounts.map((m) => m.dir), entries, files: files.length, bytes, takenAt };
  if (bytes > maxBytes) {
    throw new SnapshotRefusedError(
      `The workspace snapshot is refused: ${listing.folders.join(', ')} hold ${mbText(bytes)} in ${plural(files.length, 'file')}, over the cap of ${mbText(maxBytes)} (sandbox.workspace.snapshotMaxMB), so runs go on without /workspace. Raise sandbox.workspace.snapshotMaxMB, or leave the large files out (in a git repository, files it ignores are not copied).`,
    );
  }
  return listing;
}

/** Paths (relative, "/"-separated) a git repository holds at `dir`, tracked or not, without ignored ones; undefined when `dir` is not in one (or git is missing). */
async function gitFiles(dir: string): Promise<string[] | undefined> {
  // core.fsmonitor off: a repository's configuration could otherwise run a program of its choice.
  const git = (args: string[]) =>
    execa('git', ['-c', 'core.fsmonitor=false', '-C', dir, ...args], { reject: false, encoding: 'buffer', timeout: 60_000 });
  const inside = await git(['rev-parse', '--is-inside-work-tree']).catch(() => undefined);
  if (!inside || inside.exitCode !== 0 || Buffer.from(inside.stdout).toString().trim() !== 'true') return undefined;
  const listed = await git(['ls-files', '-z', '--cached', '--others', '--exclude-standard']);
  if (listed.exitCode !== 0) return undefined;
  return Buffer.from(listed.stdout)
    .toString('utf8')
    .split('\0')
    .filter((path) => path && !path.split('/').includes('.git'));
}

/** Every file and folder under `dir` (relative, "/"-separated) but `.git`; links are not followed. */
async function walk(dir: string, under = ''): Promise<string[]> {
  const found: string[] = [];
  const children = await readdir(join(dir, under), { withFileTypes: true }).catch(() => []);
  for (const child of children.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (child.name === '.git') continue;
    const path = under ? `${under}/${child.name}` : child.name;
    if (child.isDirectory()) found.push(`${path}/`, ...(await walk(dir, path)));
    else if (child.isFile()) found.push(path);
  }
  return found;
}

/** The entries for `paths` of `dir` (a trailing "/" marks a folder), their folders first, checked with lstat: regular files and folders only. */
async function entriesOf(dir: string, prefix: string, paths: readonly string[]): Promise<SnapshotEntry[]> {
  const entries: SnapshotEntry[] = [];
  const folders = new Set<string>();
  const inArchive = (path: string) => (prefix ? (path ? `${prefix}/${path}` : prefix) : path);
  const addFolder = async (path: string): Promise<void> => {
    if (folders.has(path)) return;
    const parent = posix.dirname(path);
    if (parent !== '.') await addFolder(parent);
    folders.add(path);
    const stat = await lstat(join(dir, ...path.split('/'))).catch(() => undefined);
    entries.push({ name: inArchive(path), type: 'dir', size: 0, mode: 0o755, mtime: (stat?.mtimeMs ?? Date.now()) / 1000 });
  };
  if (prefix) entries.push({ name: prefix, type: 'dir', size: 0, mode: 0o755, mtime: Date.now() / 1000 });
  for (const given of paths) {
    const path = given.replace(/\/+$/, '');
    if (!path) continue;
    const full = join(dir, ...path.split('/'));
    // A path that leaves the folder (it never should) is not read.
    if (relative(dir, full).startsWith(`..${sep}`)) continue;
    const stat = await lstat(full).catch(() => undefined);
    if (!stat) continue;
    const parent = posix.dirname(path);
    // The folders on the way must be folders, not links to elsewhere.
    if (parent !== '.' && !(await realFolders(dir, parent))) continue;
    if (stat.isDirectory()) await addFolder(path);
    else if (stat.isFile()) {
      if (parent !== '.') await addFolder(parent);
      entries.push({
        name: inArchive(path),
        type: 'file',
        size: stat.size,
        mode: stat.mode & 0o755,
        mtime: stat.mtimeMs / 1000,
        source: full,
      });
    }
  }
  return entries;
}

/** Whether every folder of `path` (relative to `dir`) is a real folder, not a link. */
async function realFolders(dir: string, path: string): Promise<boolean> {
  let at = dir;
  for (const part of path.split('/')) {
    at = join(at, part);
    const stat = await lstat(at).catch(() => undefined);
    if (!stat?.isDirectory()) return false;
  }
  return true;
}

/**
 * The tar of `listing`, in chunks. Each file's content is as many bytes as listed: a file that
 * grew meanwhile is cut there, one that shrank is filled with zeros, so the archive stays whole.
 */
export async function* snapshotArchive(listing: SnapshotListing): AsyncGenerator<Buffer> {
  for (const entry of listing.entries) {
    yield entryHeader(entry);
    if (entry.type !== 'file' || !entry.source) continue;
    let left = entry.size;
    // Not through a link put in its place since it was listed.
    const file = await open(entry.source, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0)).catch(() => undefined);
    try {
      while (file && left > 0) {
        const chunk = Buffer.alloc(Math.min(READ_BYTES, left));
        const { bytesRead } = await file.read(chunk, 0, chunk.length, null);
        if (bytesRead === 0) break;
        left -= bytesRead;
        yield chunk.subarray(0, bytesRead);
      }
    } finally {
      await file?.close();
    }
    while (left > 0) {
      const zeros = Buffer.alloc(Math.min(READ_BYTES, left));
      left -= zeros.length;
      yield zeros;
    }
    yield padding(entry.size);
  }
  yield archiveEnd();
}

/** What the sandbox's Python is told of a snapshot (refresh_workspace()'s answer). */
export function snapshotInfo(listing: SnapshotListing): { folders: string[]; files: number; bytes: number; taken: string; text: string } {
  return {
    folders: listing.folders,
    files: listing.files,
    bytes: listing.bytes,
    taken: listing.takenAt.toISOString(),
    text: snapshotText(listing),
  };
}

/** A container's workspace folders, as its start resolved them: mounted, or (a remote engine) to copy in. */
export interface WorkspaceFolders {
  config: SandboxConfig;
  /** The bridge's state folder, never part of a workspace. */
  stateDir?: string | undefined;
  workspace?: WorkspaceMount[];
  snapshot?: WorkspaceMount[];
}

/** A snapshot to send, or why there is none (then /workspace is emptied: no stale copy is read as current). */
export type TakenSnapshot = { listing: SnapshotListing; info: WorkspaceRefresh } | { refused: Error };

/** The folders listed again now (checked again as at a start), within the cap. */
export async function takeSnapshot(folders: WorkspaceFolders): Promise<TakenSnapshot> {
  try {
    const mounts = resolveWorkspaceMounts(folders.config, forbiddenMountDirs(folders.stateDir));
    const listing = await listSnapshot(mounts, snapshotMaxBytes(folders.config));
    return { listing, info: { mode: 'snapshot', ...snapshotInfo(listing) } };
  } catch (error) {
    return { refused: error instanceof SnapshotRefusedError ? error : new WorkspaceRefreshError((error as Error).message) };
  }
}

/** The frames that carry a snapshot to the kernel: `begin`, its tar in `data` frames, `end` with what it is. */
export async function* snapshotFrames(snapshot: TakenSnapshot): AsyncGenerator<HostMessage> {
  yield { t: 'ws', op: 'begin' };
  if ('refused' in snapshot) {
    yield { t: 'ws', op: 'end', text: `no copy: ${snapshot.refused.message}` };
    return;
  }
  let pending: Buffer[] = [];
  let size = 0;
  for await (const chunk of snapshotArchive(snapshot.listing)) {
    pending.push(chunk);
    size += chunk.length;
    if (size < FRAME_BYTES) continue;
    yield { t: 'ws', op: 'data', data: Buffer.concat(pending).toString('base64') };
    pending = [];
    size = 0;
  }
  if (size > 0) yield { t: 'ws', op: 'data', data: Buffer.concat(pending).toString('base64') };
  yield { t: 'ws', op: 'end', text: snapshotText(snapshot.listing) };
}

/** refresh_workspace() where the folders are mounted: nothing to copy, the files are live. */
export function mountedRefresh(mounts: readonly WorkspaceMount[]): WorkspaceRefresh {
  return { mode: 'mounted', folders: mounts.map((m) => m.dir), text: `mounted, not copied (the files are live): ${mountsText(mounts)}` };
}

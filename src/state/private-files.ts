// The state dir holds code, output and tool arguments: only its owner may read it. Folders are
// 0700 and files 0600 whatever the umask, and files made by older versions (or by a umask
// that let others in) are tightened when they are next used. On Windows modes are ignored.
//
// Nothing is written, read or tightened through a symbolic link inside the state dir (a link
// planted as runs.jsonl or images/ would send the audit record, or a chmod, elsewhere): files
// are opened with O_NOFOLLOW (and O_NONBLOCK, so that a FIFO never hangs a writer), only
// regular files are used, and modes are set on the open descriptor. The state dir itself may
// be a link the user made: it is followed, and used only when it is the user's own folder.
import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  rmSync,
  writeSync,
  type Stats,
} from 'node:fs';
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { dirname } from 'node:path';

const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

// Absent on Windows (0 there: links are checked with lstat where it matters).
const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const NONBLOCK = constants.O_NONBLOCK ?? 0;
const DIRECTORY = constants.O_DIRECTORY ?? 0;
const WINDOWS = process.platform === 'win32';

/** A path in the state dir that is a symbolic link or not a regular file (folder), refused. */
export class UnsafeStatePathError extends Error {
  override readonly name = 'UnsafeStatePathError';
}

/** Creates the state dir (and its parents) if needed and makes it owner-only. Throws when it cannot. */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  tightenDir(dir, false);
}

export async function ensurePrivateDirAsync(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  ensurePrivateDir(dir);
}

/**
 * A folder the bridge keeps inside the state dir (images/, oauth/, snippets/): the state dir is
 * made as ensurePrivateDir does; this folder is made if missing and refused when it is a link.
 */
export function ensurePrivateSubdir(dir: string): void {
  ensurePrivateDir(dirname(dir));
  try {
    mkdirSync(dir, { mode: PRIVATE_DIR_MODE });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  tightenDir(dir, true);
}

export async function ensurePrivateSubdirAsync(dir: string): Promise<void> {
  await ensurePrivateDirAsync(dirname(dir));
  ensurePrivateSubdir(dir);
}

/** Whether the path is a real folder (not a link to one): where the bridge may list and remove files. */
export function isRealDir(dir: string): boolean {
  try {
    return lstatSync(dir).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Opens a state file for writing, never through a link and only when it is a regular file,
 * owner-only (a file made before this version may be 0644: tightened on its descriptor).
 * `append`: O_APPEND, made if missing; `create`: a new file (O_EXCL). Returns the descriptor.
 */
export function openPrivateFileSync(path: string, how: 'append' | 'create'): number {
  const flags = constants.O_WRONLY | constants.O_CREAT | NOFOLLOW | NONBLOCK | (how === 'append' ? constants.O_APPEND : constants.O_EXCL);
  if (WINDOWS) refuseLink(path);
  let fd: number;
  try {
    fd = openSync(path, flags, PRIVATE_FILE_MODE);
  } catch (error) {
    throw unsafeOrSame(error, path);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw notRegular(path, stat);
    if (!WINDOWS && (stat.mode & 0o777) !== PRIVATE_FILE_MODE) fchmodSync(fd, PRIVATE_FILE_MODE);
    return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/** Replaces a file atomically (temp file + rename), owner-only from its first byte. A link at `path` is replaced, never followed. */
export async function writePrivateFile(path: string, data: string | Uint8Array): Promise<void> {
  const temp = tempName(path);
  let file: FileHandle | undefined;
  try {
    file = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW, PRIVATE_FILE_MODE);
    await file.writeFile(data);
    if (!WINDOWS) await file.chmod(PRIVATE_FILE_MODE);
    await file.close();
    file = undefined;
    await rename(temp, path);
  } catch (error) {
    await file?.close().catch(() => undefined);
    await rm(temp, { force: true }).catch(() => undefined);
    throw error;
  }
}

/** writePrivateFile, synchronously (the run log's images are written between a run's events). */
export function writePrivateFileSync(path: string, data: Uint8Array): void {
  const temp = tempName(path);
  try {
    const fd = openPrivateFileSync(temp, 'create');
    try {
      writeSync(fd, data);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

/**
 * A state file's bytes, never through a link and only from a regular file (a FIFO would block
 * the reader for ever); undefined when it is missing or over `maxBytes`. Throws
 * UnsafeStatePathError for a link or a non-regular file.
 */
export function readPrivateFileSync(path: string, maxBytes: number): Buffer | undefined {
  if (WINDOWS) refuseLink(path);
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | NOFOLLOW | NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw unsafeOrSame(error, path);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw notRegular(path, stat);
    if (stat.size > maxBytes) return undefined;
    const buffer = Buffer.alloc(stat.size);
    let got = 0;
    while (got < buffer.length) {
      const n = readSync(fd, buffer, got, buffer.length - got, got);
      if (n === 0) break;
      got += n;
    }
    return buffer.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}

/** readPrivateFileSync, asynchronously, as text. */
export async function readPrivateFile(path: string, maxBytes: number): Promise<string | undefined> {
  if (WINDOWS) refuseLink(path);
  let file: FileHandle;
  try {
    file = await open(path, constants.O_RDONLY | NOFOLLOW | NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw unsafeOrSame(error, path);
  }
  try {
    const stat = await file.stat();
    if (!stat.isFile()) throw notRegular(path, stat);
    return stat.size > maxBytes ? undefined : await file.readFile('utf8');
  } finally {
    await file.close();
  }
}

function tempName(path: string): string {
  return `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
}

/** Tightens a folder through its descriptor; `noLink`: a link there is refused, not followed. */
function tightenDir(dir: string, noLink: boolean): void {
  if (WINDOWS) {
    if (noLink) refuseLink(dir);
    return;
  }
  let fd: number;
  try {
    fd = openSync(dir, constants.O_RDONLY | DIRECTORY | (noLink ? NOFOLLOW : 0));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // Linux says ENOTDIR for a link opened with O_DIRECTORY | O_NOFOLLOW.
    if (code === 'ENOTDIR' && noLink) refuseLink(dir);
    if (code === 'ENOTDIR')
      throw new UnsafeStatePathError(
        `refusing ${dir}: it is not a folder; the state dir's own folders must be real folders (remove it, and it is made again)`,
      );
    throw unsafeOrSame(error, dir);
  }
  try {
    const stat = fstatSync(fd);
    // Never a shared folder someone pointed stateDir at (/tmp has the sticky bit), nor another user's.
    if ((stat.mode & 0o1000) !== 0 || (process.getuid && stat.uid !== process.getuid())) return;
    if ((stat.mode & 0o777) !== PRIVATE_DIR_MODE) fchmodSync(fd, PRIVATE_DIR_MODE);
  } finally {
    closeSync(fd);
  }
}

function refuseLink(path: string): void {
  try {
    if (lstatSync(path).isSymbolicLink()) throw linkRefused(path);
  } catch (error) {
    if (error instanceof UnsafeStatePathError) throw error;
  }
}

/** O_NOFOLLOW on a link fails with ELOOP (EMLINK on some BSDs), a FIFO with ENXIO: said plainly, with the fix. */
function unsafeOrSame(error: unknown, path: string): unknown {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ELOOP' || code === 'EMLINK') return linkRefused(path);
  // A FIFO with no reader (or a device with none behind it), opened for writing without blocking.
  if (code === 'ENXIO')
    return new UnsafeStatePathError(`refusing ${path}: it is a FIFO or device, not a regular file (remove it; the file is made again)`);
  return error;
}

function linkRefused(path: string): UnsafeStatePathError {
  return new UnsafeStatePathError(
    `refusing ${path}: it is a symbolic link, and the state dir's files are never used through links (remove the link; the file is made again)`,
  );
}

function notRegular(path: string, stat: Stats): UnsafeStatePathError {
  const kind = stat.isFIFO() ? 'a FIFO' : stat.isSocket() ? 'a socket' : stat.isDirectory() ? 'a folder' : 'not a regular file';
  return new UnsafeStatePathError(`refusing ${path}: it is ${kind}, not a regular file (remove it; the file is made again)`);
}

// The state dir holds code, output and tool arguments: only its owner may read it. Folders are
// 0700 and files 0600 whatever the umask, and files made by older versions (or by a umask
// that let others in) are tightened when they are next used. On Windows modes are ignored.
import { chmodSync, fstatSync, mkdirSync, statSync } from 'node:fs';
import { chmod, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Creates the folder (and its parents) if needed and makes it owner-only. Throws when it cannot. */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const stat = statSync(dir);
  // Never a shared folder someone pointed stateDir at (/tmp has the sticky bit), nor another user's.
  if ((stat.mode & 0o1000) !== 0 || (process.getuid && stat.uid !== process.getuid())) return;
  tighten(dir, stat.mode, PRIVATE_DIR_MODE);
}

export async function ensurePrivateDirAsync(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  ensurePrivateDir(dir);
}

/** Makes an open file owner-only (a file created before this version may be 0644). */
export function tightenOpenFile(fd: number, path: string): void {
  tighten(path, fstatSync(fd).mode, PRIVATE_FILE_MODE);
}

/** Replaces a file atomically (temp file + rename), owner-only from its first byte. */
export async function writePrivateFile(path: string, data: string | Uint8Array): Promise<void> {
  const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(temp, data, { mode: PRIVATE_FILE_MODE });
    await chmod(temp, PRIVATE_FILE_MODE);
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true }).catch(() => undefined);
    throw error;
  }
}

function tighten(path: string, mode: number, wanted: number): void {
  if (process.platform === 'win32' || (mode & 0o777) === wanted) return;
  chmodSync(path, wanted);
}

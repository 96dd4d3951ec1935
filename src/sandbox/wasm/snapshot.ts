// The interpreter snapshot the WebAssembly kernel starts from (deno-kernel/make-snapshot.ts):
// made once per machine, user, Pyodide and Deno, and kept in the user's cache folder. A kernel
// restored from it is ready in about 0.5 s of CPU instead of 4 s. The first start makes it (a
// plain start plus a second or so) and later ones read it; when it cannot be made, kernels
// start from scratch as before. Only a regular file of this user, writable by nobody else, is
// used: a file someone else could write would be the memory of every interpreter.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  constants,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { cacheDir } from '../../shared/cache-dir.ts';
import { denoBinary, kernelDir, pyodideDir } from './command.ts';

/** A snapshot is tens of MB; anything outside these bounds is not one. */
const MIN_SNAPSHOT_BYTES = 1024 * 1024;
const MAX_SNAPSHOT_BYTES = 512 * 1024 * 1024;
/** Making one takes seconds, more on a loaded machine; past this it is given up. */
const MAKE_TIMEOUT_MS = 120_000;
/** A lock older than any maker keeps it was left by one that died. */
const STALE_LOCK_MS = MAKE_TIMEOUT_MS + 10_000;
/** Snapshots of another Pyodide, Deno or loader, made longer ago than this, are removed when one is made. */
const KEEP_OTHERS_MS = 7 * 24 * 3600_000;

/**
 * The snapshot's file: named for what it was made from (Pyodide's version and binary, Deno's
 * binary, the loader), so a new Pyodide, Deno or loader makes a new one. Not for where they are:
 * an update of the extension that keeps them keeps its snapshot, and needs no first slow start.
 */
export function snapshotFile(dir = cacheDir()): string {
  return join(dir, `pyodide-${snapshotIdentity(pyodideDir(), denoBinary(), kernelDir())}.snapshot`);
}

/** What a snapshot made from these files is named for: their contents (the binaries by size), never their paths. */
export function snapshotIdentity(pyodide: string, deno: string, kernel: string): string {
  const hash = createHash('sha256');
  hash.update(readFileSync(join(pyodide, 'package.json')));
  for (const file of [join(pyodide, 'pyodide.asm.wasm'), deno]) hash.update(`${statSync(file).size}\0`);
  for (const file of ['load-python.ts', 'make-snapshot.ts']) hash.update(readFileSync(join(kernel, file)));
  return hash.digest('hex').slice(0, 16);
}

/** Why a file is not a snapshot to use, or undefined when it is one. */
export function unsound(file: string): string | undefined {
  let stat;
  try {
    stat = lstatSync(file);
  } catch {
    return 'there is none';
  }
  if (!stat.isFile()) return 'it is not a regular file';
  if (stat.size < MIN_SNAPSHOT_BYTES || stat.size > MAX_SNAPSHOT_BYTES) return `its size (${stat.size} bytes) is not a snapshot's`;
  if (process.platform !== 'win32') {
    if (process.getuid && stat.uid !== process.getuid()) return 'another user owns it';
    if ((stat.mode & 0o022) !== 0) return 'others may write it';
  }
  return undefined;
}

let making: Promise<string | undefined> | undefined;

/**
 * The snapshot to start from: the cached one, or one made now (once per process; while another
 * process makes it, this one waits for it). Undefined when there is none to use: the kernel
 * then starts from scratch. Never rejects.
 */
export function interpreterSnapshot(): Promise<string | undefined> {
  let file: string;
  try {
    file = snapshotFile();
  } catch {
    return Promise.resolve(undefined);
  }
  if (!unsound(file)) return Promise.resolve(file);
  making ??= makeSnapshot(file)
    .catch((error: unknown) => {
      process.stderr.write(
        `[sandbox] the WebAssembly interpreter snapshot was not made (${String(error)}); interpreters start from scratch\n`,
      );
    })
    .then(() => (unsound(file) ? undefined : file))
    .finally(() => {
      making = undefined;
    });
  return making;
}

/** Runs make-snapshot.ts and puts its bytes in place (a private temporary file, then a rename), under a lock. */
export async function makeSnapshot(file: string, maxWaitMs = MAX_WAIT_MS): Promise<void> {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const lock = `${file}.lock`;
  if (!takeLock(lock)) {
    // Another process is making it: waiting costs nothing, where a start from scratch beside
    // it would cost seconds of CPU (several windows or bridges starting at once).
    await madeElsewhere(file, lock, maxWaitMs);
    return;
  }
  try {
    const bytes = await runMaker();
    const temp = `${file}.${process.pid}.tmp`;
    rmSync(temp, { force: true });
    const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0), 0o600);
    try {
      for (let at = 0; at < bytes.length;) at += writeSync(fd, bytes, at);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, file);
  } finally {
    rmSync(lock, { force: true });
  }
  pruneOthers(file);
}

/** Removes the snapshots of other versions that no start has made for a week (tens of MB each). */
function pruneOthers(file: string): void {
  const dir = dirname(file);
  for (const name of readdirSync(dir)) {
    const other = join(dir, name);
    if (other === file || !/^pyodide-[0-9a-f]{16}\.snapshot$/.test(name)) continue;
    try {
      const stat = lstatSync(other);
      if (stat.isFile() && Date.now() - stat.mtimeMs > KEEP_OTHERS_MS) rmSync(other, { force: true });
    } catch {
      // gone meanwhile
    }
  }
}

/**
 * Returns once the snapshot is there, or the other maker's lock has gone or gone stale (it failed
 * or died), or after `maxWaitMs` (a maker that hangs costs a start from scratch, not minutes).
 */
async function madeElsewhere(file: string, lock: string, maxWaitMs: number): Promise<void> {
  const deadline = Date.now() + maxWaitMs;
  while (unsound(file) && Date.now() < deadline) {
    let age: number;
    try {
      age = Date.now() - lstatSync(lock).mtimeMs;
    } catch {
      return;
    }
    if (age >= STALE_LOCK_MS) return;
    await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_MS));
  }
}

/** How often a start waiting for another process's maker looks again, and for how long at most. */
const WAIT_POLL_MS = 200;
const MAX_WAIT_MS = 30_000;

function takeLock(lock: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      closeSync(openSync(lock, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600));
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    try {
      if (Date.now() - lstatSync(lock).mtimeMs < STALE_LOCK_MS) return false;
      rmSync(lock, { force: true });
    } catch {
      // gone meanwhile: try again
    }
  }
  return false;
}

function runMaker(): Promise<Buffer> {
  const pyodide = pyodideDir();
  const kernel = kernelDir();
  return new Promise((resolve, reject) => {
    const child = spawn(
      denoBinary(),
      [
        'run',
        '--no-prompt',
        // The kernel's own permission: reading these two folders. The bytes come back on stdout.
        `--allow-read=${pyodide},${kernel}`,
        '--no-config',
        '--no-lock',
        join(kernel, 'make-snapshot.ts'),
        `--pyodide=${pyodide}`,
      ],
      { env: { DENO_NO_UPDATE_CHECK: '1', DENO_NO_PACKAGE_JSON: '1' }, stdio: ['ignore', 'pipe', 'pipe'], timeout: MAKE_TIMEOUT_MS },
    );
    const chunks: Buffer[] = [];
    let size = 0;
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_SNAPSHOT_BYTES) child.kill('SIGKILL');
      else chunks.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-2000)));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const bytes = Buffer.concat(chunks);
      if (code === 0 && bytes.length >= MIN_SNAPSHOT_BYTES && size <= MAX_SNAPSHOT_BYTES) resolve(bytes);
      else
        reject(
          new Error(`the maker ended with ${signal ?? `exit ${code}`}: ${stderr.trim().split('\n').slice(-3).join(' ') || 'no output'}`),
        );
    });
  });
}

// A lock file for the few steps that several bridges (one per VS Code window, plus command-line
// runs) must not do at once in one state dir: rotating the shared run log, pruning images,
// rewriting catalog.json. Created with O_EXCL; a lock whose holder died on this host, or that
// is older than any holder keeps it, is broken. Held for milliseconds, so waiting is a short
// spin (synchronous for the run log, whose appends are synchronous). A link or anything but a
// regular file in the lock's place is never read through: it counts as a stale lock.
import { randomBytes } from 'node:crypto';
import { closeSync, lstatSync, linkSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { processAlive } from '../shared/process-alive.ts';
import { openPrivateFileSync, readPrivateFileSync } from './private-files.ts';

export interface LockOptions {
  /** Give up after this long (the caller decides what giving up means). */
  timeoutMs?: number;
  /** A lock older than this is taken to be left over from a crash. */
  staleMs?: number;
}

const DEFAULT_TIMEOUT_MS = 5000;
const DEFAULT_STALE_MS = 4000;
const HOST = hostname();
/** A lock holds a pid and a host name. */
const MAX_LOCK_BYTES = 4096;

function tryAcquire(path: string, staleMs: number): boolean {
  try {
    const fd = openPrivateFileSync(path, 'create');
    try {
      writeSync(fd, `${process.pid}\n${HOST}\n`);
    } finally {
      closeSync(fd);
    }
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  breakIfStale(path, staleMs);
  return false;
}

function breakIfStale(path: string, staleMs: number): void {
  let content: string;
  let mtimeMs: number;
  try {
    mtimeMs = lstatSync(path).mtimeMs;
  } catch {
    return; // released meanwhile
  }
  try {
    const bytes = readPrivateFileSync(path, MAX_LOCK_BYTES);
    // Released meanwhile (the rename below finds nothing), or too big to be a lock: stale.
    content = bytes?.toString('utf8') ?? '';
    if (!bytes) mtimeMs = 0;
  } catch {
    // A link, FIFO or folder: no holder wrote it, so it is stale now.
    content = '';
    mtimeMs = 0;
  }
  const [pid, host] = content.split('\n');
  const holderDead = host === HOST && Number(pid) > 0 && !processAlive(Number(pid));
  if (!holderDead && Date.now() - mtimeMs < staleMs) return;
  // Move it aside before removing, and put it back if what was moved is not what was judged
  // stale (another process broke it and took a fresh lock in between).
  const aside = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.stale`;
  try {
    renameSync(path, aside);
  } catch {
    return;
  }
  try {
    if ((readPrivateFileSync(aside, MAX_LOCK_BYTES)?.toString('utf8') ?? '') !== content) linkSync(aside, path);
  } catch {
    // A lock is there again: fine, whoever holds it goes first.
  }
  try {
    unlinkSync(aside);
  } catch {
    // already gone
  }
}

function release(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // broken as stale by another process: nothing to release
  }
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** Runs fn holding the lock; undefined (fn not run) when the lock could not be had in time. */
export function withLockSync<T>(path: string, fn: () => T, options: LockOptions = {}): { value: T } | undefined {
  const deadline = Date.now() + (options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  let wait = 1;
  while (!tryAcquire(path, options.staleMs ?? DEFAULT_STALE_MS)) {
    if (Date.now() > deadline) return undefined;
    Atomics.wait(sleeper, 0, 0, wait);
    wait = Math.min(wait * 2, 25);
  }
  try {
    return { value: fn() };
  } finally {
    release(path);
  }
}

export async function withLock<T>(path: string, fn: () => Promise<T>, options: LockOptions = {}): Promise<{ value: T } | undefined> {
  const deadline = Date.now() + (options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  let wait = 2;
  while (!tryAcquire(path, options.staleMs ?? DEFAULT_STALE_MS)) {
    if (Date.now() > deadline) return undefined;
    await new Promise((resolve) => setTimeout(resolve, wait));
    wait = Math.min(wait * 2, 50);
  }
  try {
    return { value: await fn() };
  } finally {
    release(path);
  }
}

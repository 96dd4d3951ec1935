// runs.jsonl as several writers share it (one bridge per VS Code window, command-line runs):
// - every event is one write() on an O_APPEND descriptor, so lines of different writers never
//   interleave, and the size that decides a rotation is the file's, not a private counter;
// - a rotation (runs.jsonl -> runs.1.jsonl -> ... -> runs.<keep>.jsonl) happens under a lock
//   file, and only if no other writer rotated first; a writer whose file was rotated away (or
//   deleted) notices before its next event and reopens. An event that races a rotation lands
//   in runs.1.jsonl, which the reader reads too.
import { closeSync, existsSync, fstatSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { withLockSync } from '../lock.ts';
import { ensurePrivateDir, openPrivateFileSync } from '../private-files.ts';
import { RUN_LOG_FILE, RUN_LOG_LOCK, rotatedLogName } from './files.ts';

/** After a rotation could not get the lock, appends go on and the next try waits this long. */
const ROTATE_RETRY_MS = 30_000;

export interface AppendFileLimits {
  /** Rotate before a line would take the file over this. */
  maxFileBytes: number;
  /** Rotated files kept. */
  keepFiles: number;
}

export class AppendFile {
  readonly file: string;
  private readonly dir: string;
  private readonly limits: AppendFileLimits;
  /** Told of the oldest rotated file just before it is removed. */
  private readonly onRetire: (file: string) => void;
  private fd: number | undefined;
  /** The open file's inode and device, to tell when runs.jsonl is another file now. */
  private openIdentity = { ino: -1, dev: -1 };
  private rotateAfter = 0;

  constructor(dir: string, limits: AppendFileLimits, onRetire: (file: string) => void) {
    this.dir = dir;
    this.file = join(dir, RUN_LOG_FILE);
    this.limits = limits;
    this.onRetire = onRetire;
  }

  /** Appends one line (synchronously: it is on disk before the next step), rotating first when due; throws why it could not. */
  append(line: Buffer): void {
    const size = this.open();
    if (size > 0 && size + line.length > this.limits.maxFileBytes && Date.now() >= this.rotateAfter) this.rotate();
    writeSync(this.fd!, line);
  }

  close(): void {
    if (this.fd !== undefined) {
      try {
        closeSync(this.fd);
      } catch {
        // already unusable
      }
    }
    this.fd = undefined;
  }

  /**
   * Opens runs.jsonl, again when the open file is no longer it (rotated by another writer,
   * deleted); returns its size. One stat of the path per event: the open file's identity is kept.
   */
  open(): number {
    if (this.fd !== undefined) {
      try {
        const onDisk = statSync(this.file);
        if (onDisk.ino === this.openIdentity.ino && onDisk.dev === this.openIdentity.dev) return onDisk.size;
      } catch {
        // gone: reopen below
      }
      this.close();
    }
    ensurePrivateDir(this.dir);
    // Never through a link planted as runs.jsonl, nor into a FIFO or device.
    this.fd = openPrivateFileSync(this.file, 'append');
    const opened = fstatSync(this.fd);
    this.openIdentity = { ino: opened.ino, dev: opened.dev };
    return opened.size;
  }

  private rotate(): void {
    const mine = fstatSync(this.fd!).ino;
    const done = withLockSync(
      join(this.dir, RUN_LOG_LOCK),
      () => {
        // Another writer may have rotated while this one waited: then there is nothing to do.
        let current;
        try {
          current = statSync(this.file);
        } catch {
          return;
        }
        if (current.ino !== mine) return;
        const rotated = (n: number) => join(this.dir, rotatedLogName(n));
        const oldest = rotated(this.limits.keepFiles);
        if (existsSync(oldest)) {
          this.onRetire(oldest);
          rmSync(oldest, { force: true });
        }
        for (let n = this.limits.keepFiles - 1; n >= 1; n--) if (existsSync(rotated(n))) renameSync(rotated(n), rotated(n + 1));
        renameSync(this.file, rotated(1));
      },
      { timeoutMs: 1000 },
    );
    if (!done) this.rotateAfter = Date.now() + ROTATE_RETRY_MS;
    this.open();
  }
}

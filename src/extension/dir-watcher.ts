// Watches the state dir for the views. An FSWatcher with no 'error' listener takes the whole
// extension host down when its folder goes away (deleted, or a drive unmounted), and a
// watcher on a deleted folder silently sees nothing once the folder is made again (the bridge
// recreates it on its next write). So: errors are listened to, the folder's identity is
// checked now and then, and the watch is made again, with a change reported, when it was lost.
// No 'vscode' here: the wrapper is unit-tested.
import { statSync, watch, type FSWatcher, type Stats } from 'node:fs';
import { basename } from 'node:path';

export interface DirWatcherOptions {
  /** Makes (or checks) the folder before each watch; throws when it cannot be used. */
  prepare?: (dir: string) => void;
  /** Told why the folder cannot be watched, and undefined once it can again. */
  onProblem?: (problem: string | undefined) => void;
  /** How often the folder's identity is checked and a lost watch retried. */
  checkMs?: number;
}

export class DirWatcher {
  private readonly dir: string;
  private readonly onChange: (file: string | null) => void;
  private readonly options: DirWatcherOptions;
  private watcher: FSWatcher | undefined;
  private watched: Stats | undefined;
  private readonly timer: NodeJS.Timeout;
  private problem: string | undefined;
  private disposed = false;

  constructor(dir: string, onChange: (file: string | null) => void, options: DirWatcherOptions = {}) {
    this.dir = dir;
    this.onChange = onChange;
    this.options = options;
    this.start(false);
    this.timer = setInterval(() => this.check(), options.checkMs ?? 2000);
    this.timer.unref();
  }

  /** Whether a watch is in place now. */
  get watching(): boolean {
    return this.watcher !== undefined;
  }

  dispose(): void {
    this.disposed = true;
    clearInterval(this.timer);
    this.stop();
  }

  private start(report: boolean): void {
    if (this.disposed) return;
    try {
      this.options.prepare?.(this.dir);
      const stat = statSync(this.dir);
      if (!stat.isDirectory()) throw new Error('it is not a folder');
      const watcher = watch(this.dir, (event, file) => {
        // The folder itself deleted (reported under its own name): watch it anew, now.
        if (file === null || file === basename(this.dir)) return this.lost();
        if (event === 'rename') this.check();
        this.onChange(file);
      });
      watcher.on('error', () => this.lost());
      this.watcher = watcher;
      this.watched = stat;
      this.setProblem(undefined);
      // Whatever happened while unwatched (runs written, the folder replaced) is news.
      if (report) this.onChange(null);
    } catch (error) {
      this.stop();
      this.setProblem(`cannot watch ${this.dir}: ${(error as Error).message}`);
    }
  }

  private check(): void {
    if (this.disposed) return;
    if (!this.watcher) return this.start(true);
    try {
      const stat = statSync(this.dir);
      // A folder made again often gets the same inode back; its birth time tells them apart.
      const same =
        this.watched && stat.dev === this.watched.dev && stat.ino === this.watched.ino && stat.birthtimeMs === this.watched.birthtimeMs;
      if (stat.isDirectory() && same) return;
    } catch {
      // gone
    }
    this.lost();
  }

  private lost(): void {
    this.stop();
    this.start(true);
  }

  private stop(): void {
    const watcher = this.watcher;
    this.watcher = undefined;
    this.watched = undefined;
    try {
      watcher?.close();
    } catch {
      // already closed by its error
    }
  }

  private setProblem(problem: string | undefined): void {
    if (problem === this.problem) return;
    this.problem = problem;
    this.options.onProblem?.(problem);
  }
}

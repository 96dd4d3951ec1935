// Follows what the bridges write to the state dir: the run log (every bridge's runs, across
// rotation) and the tool catalog (this window's bridge's view of it). Watches the folder (the
// files may not exist yet, the folder may be deleted), debounces bursts, re-reads on change,
// and says when the folder cannot be used (the audit record would be lost).
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { CATALOG_FILE, MAX_CATALOG_FILE_BYTES, mergeCatalog, parseCatalogFile, type CatalogServers } from '../state/catalog-file.ts';
import { ensurePrivateDir, readPrivateFileSync, writePrivateFileSync } from '../state/private-files.ts';
import { RunLogReader, type RunRecord } from '../state/run-log/reader.ts';
import { isRunLogName, RUN_LOG_FILE } from '../state/run-log/files.ts';
import { DirWatcher } from './dir-watcher.ts';

/** Makes the state dir (owner-only) and proves it can be written. */
function prepareStateDir(dir: string): void {
  ensurePrivateDir(dir);
  const probe = join(dir, `.write-test-${process.pid}`);
  writePrivateFileSync(probe, new Uint8Array());
  rmSync(probe, { force: true });
}

export class StateFiles implements vscode.Disposable {
  readonly dir: string;
  /** This window's id, as its bridge writes it in the catalog and on its runs. */
  readonly owner: string | undefined;
  private readonly runsChanged = new vscode.EventEmitter<void>();
  private readonly catalogChanged = new vscode.EventEmitter<void>();
  private readonly problemChanged = new vscode.EventEmitter<string | undefined>();
  readonly onDidChangeRuns = this.runsChanged.event;
  readonly onDidChangeCatalog = this.catalogChanged.event;
  /** Fired with why the state dir cannot be used, and with undefined once it can again. */
  readonly onDidChangeProblem = this.problemChanged.event;
  private readonly reader: RunLogReader;
  private readonly watcher: DirWatcher;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private currentProblem: string | undefined;

  /** `owner`: this window's id, as its bridge writes it in the catalog. */
  constructor(dir: string, owner?: string) {
    this.dir = dir;
    this.owner = owner;
    this.reader = new RunLogReader(dir);
    this.watcher = new DirWatcher(
      dir,
      (file) => {
        if (file === null || isRunLogName(file)) this.debounce('runs', () => this.runsChanged.fire());
        if (file === null || file === CATALOG_FILE) this.debounce('catalog', () => this.catalogChanged.fire());
      },
      {
        prepare: prepareStateDir,
        onProblem: (problem) => {
          this.currentProblem = problem;
          this.problemChanged.fire(problem);
        },
      },
    );
  }

  get runLogPath(): string {
    return join(this.dir, RUN_LOG_FILE);
  }

  /** Why the state dir cannot be used right now (undefined: it can). */
  get problem(): string | undefined {
    return this.currentProblem;
  }

  /** Every bridge's runs, oldest first. */
  runs(): RunRecord[] {
    try {
      return this.reader.runs();
    } catch {
      return [];
    }
  }

  /** The servers as this window's bridge sees them, with tool lists from any writer. */
  catalog(): CatalogServers {
    try {
      const text = readPrivateFileSync(join(this.dir, CATALOG_FILE), MAX_CATALOG_FILE_BYTES)?.toString('utf8');
      return text === undefined ? {} : mergeCatalog(parseCatalogFile(text), this.owner);
    } catch {
      return {};
    }
  }

  private debounce(key: string, fire: () => void): void {
    clearTimeout(this.timers.get(key));
    this.timers.set(key, setTimeout(fire, 150));
  }

  dispose(): void {
    this.watcher.dispose();
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.runsChanged.dispose();
    this.catalogChanged.dispose();
    this.problemChanged.dispose();
  }
}

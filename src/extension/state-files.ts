// Follows what the bridge writes to the state dir: the run log and the tool catalog. Watches
// the folder (the files may not exist yet), debounces bursts, and re-reads on change.
import { existsSync, mkdirSync, readFileSync, statSync, watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { CATALOG_FILE, cacheSchema, type CatalogFile } from '../bridge/catalog/catalog.ts';
import { parseRunLog, type RunRecord } from '../bridge/run-log-reader.ts';
import { RUN_LOG_FILE } from '../bridge/run-log.ts';

/** Only the tail of a long log is shown; the file itself keeps everything (and rotates). */
const MAX_LOG_BYTES = 4 * 1024 * 1024;

export class StateFiles implements vscode.Disposable {
  readonly dir: string;
  private readonly runsChanged = new vscode.EventEmitter<void>();
  private readonly catalogChanged = new vscode.EventEmitter<void>();
  readonly onDidChangeRuns = this.runsChanged.event;
  readonly onDidChangeCatalog = this.catalogChanged.event;
  private watcher: FSWatcher | undefined;
  private timers = new Map<string, NodeJS.Timeout>();
  private runsCache: { mtimeMs: number; size: number; runs: RunRecord[] } | undefined;

  constructor(dir: string) {
    this.dir = dir;
    mkdirSync(dir, { recursive: true });
    try {
      this.watcher = watch(dir, (_event, file) => {
        if (file === RUN_LOG_FILE) this.debounce('runs', () => this.runsChanged.fire());
        else if (file === CATALOG_FILE) this.debounce('catalog', () => this.catalogChanged.fire());
      });
    } catch {
      // Without a watcher the views still refresh on their refresh commands.
    }
  }

  get runLogPath(): string {
    return join(this.dir, RUN_LOG_FILE);
  }

  runs(): RunRecord[] {
    const path = this.runLogPath;
    if (!existsSync(path)) return [];
    const stat = statSync(path);
    if (this.runsCache && this.runsCache.mtimeMs === stat.mtimeMs && this.runsCache.size === stat.size) return this.runsCache.runs;
    const buffer = readFileSync(path);
    const text = buffer.subarray(Math.max(0, buffer.length - MAX_LOG_BYTES)).toString('utf8');
    const runs = parseRunLog(text);
    this.runsCache = { mtimeMs: stat.mtimeMs, size: stat.size, runs };
    return runs;
  }

  catalog(): CatalogFile['servers'] {
    try {
      const parsed = cacheSchema.safeParse(JSON.parse(readFileSync(join(this.dir, CATALOG_FILE), 'utf8')));
      return parsed.success ? parsed.data.servers : {};
    } catch {
      return {};
    }
  }

  private debounce(key: string, fire: () => void): void {
    clearTimeout(this.timers.get(key));
    this.timers.set(key, setTimeout(fire, 150));
  }

  dispose(): void {
    this.watcher?.close();
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.runsChanged.dispose();
    this.catalogChanged.dispose();
  }
}

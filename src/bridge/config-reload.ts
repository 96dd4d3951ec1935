// Re-reads the bridge's configuration file while it runs (the VS Code extension rewrites it on
// each settings change, and its sealed secrets file on each secret change) and hands what they
// hold to the bridge, which applies what a running bridge can change (servers and their
// secrets, proxy settings, result sizes). A file that does not load is said in the log and
// ignored: the bridge keeps the configuration it runs with.
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { restartReasons } from '../config/restart-keys.ts';
import type { ConfigWithSecrets } from '../config/secrets.ts';

export interface ConfigReloadOptions {
  file: string;
  /** The sealed secrets file (state/secrets-file.ts), if any: a change of it is read as one of `file`. */
  secretsFile?: string | undefined;
  /** Reads the file as at start: the same schema, secrets and command-line options applied; throws on a bad file. */
  load: () => Promise<ConfigWithSecrets>;
  /** The configuration the bridge started with (what changes of the other keys are compared to). */
  running: ConfigWithSecrets;
  apply: (config: ConfigWithSecrets) => Promise<void>;
  log: (message: string) => void;
  /** Changes closer together than this are read once. */
  debounceMs?: number;
  /** The look that catches what the file watcher misses (network folders, a replaced folder). */
  pollMs?: number;
}

export interface ConfigReload {
  close(): void;
}

/** Watches `file` (its folder: the file is replaced, not written in place) and a slow poll besides. */
export function watchConfigFile(options: ConfigReloadOptions): ConfigReload {
  const files = [options.file, ...(options.secretsFile ? [options.secretsFile] : [])];
  let last: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let applying: Promise<void> = Promise.resolve();
  let closed = false;
  // Both texts: a change of either is a change. A missing secrets file reads as empty (load says why).
  const readTexts = async () => {
    const [config, secrets] = await Promise.all([
      readFile(options.file, 'utf8'),
      options.secretsFile ? readFile(options.secretsFile, 'utf8').catch(() => '') : '',
    ]);
    return `${config}\0${secrets}`;
  };
  // What the bridge started with is the text seen last: an unchanged file is not applied again.
  void readTexts()
    .then((text) => (last ??= text))
    .catch(() => undefined);
  const check = async () => {
    let text: string;
    try {
      text = await readTexts();
    } catch {
      return; // Gone for a moment (replaced): the next change or poll reads it.
    }
    if (text === last || closed) return;
    last = text;
    let next: ConfigWithSecrets;
    try {
      next = await options.load();
    } catch (error) {
      options.log(
        `configuration file ${options.file} changed but is not applied: ${(error as Error).message}; the bridge keeps running with its configuration until the file is fixed`,
      );
      return;
    }
    const later = restartReasons(options.running, next);
    if (later.length > 0) options.log(`configuration file: ${later.join(', ')} changed; that takes effect when the bridge restarts`);
    try {
      await options.apply(next);
      options.log(`configuration file ${options.file} applied: servers, proxy and result settings`);
    } catch (error) {
      options.log(`configuration file ${options.file} not fully applied: ${(error as Error).message}`);
    }
  };
  const schedule = () => {
    if (closed) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      applying = applying.then(check);
    }, options.debounceMs ?? 200);
    timer.unref();
  };
  const watchers: FSWatcher[] = [];
  for (const dir of new Set(files.map((file) => dirname(file)))) {
    const names = new Set(files.filter((file) => dirname(file) === dir).map((file) => basename(file)));
    try {
      const watcher = watch(dir, (_event, changed) => {
        if (!changed || names.has(changed)) schedule();
      });
      watcher.on('error', () => undefined);
      watchers.push(watcher);
    } catch {
      // The poll alone.
    }
  }
  const poll = setInterval(schedule, options.pollMs ?? 2000);
  poll.unref();
  return {
    close: () => {
      closed = true;
      clearTimeout(timer);
      clearInterval(poll);
      for (const watcher of watchers) watcher.close();
    },
  };
}

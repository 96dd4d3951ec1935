// What tells the sessions of a restarted bridge that their state is gone, and why. A VS Code
// window's bridge keeps the names of its sessions that ran code in `restarts/<owner>.sessions.json`;
// before it has VS Code restart the bridge for a settings change, the extension writes which
// settings changed in `restarts/<owner>.restart.json`; the next bridge of the same window takes
// both at its start, and each of those sessions' first run says it was reset (sessionChange).
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { ensurePrivateSubdirAsync, readPrivateFile, writePrivateFile } from './private-files.ts';

export const RESTARTS_DIR = 'restarts';
/** Files of windows gone this long are removed by the next bridge's start. */
const KEEP_MS = 30 * 24 * 3600 * 1000;
const MAX_FILE_BYTES = 256 * 1024;
const OWNER = /^[A-Za-z0-9_-]{1,64}$/;

const sessionsSchema = z.object({ sessions: z.array(z.string().max(64)).max(1000) });
const noteSchema = z.object({ at: z.string(), keys: z.array(z.string().max(200)).max(200) });

function fileOf(stateDir: string, owner: string, kind: 'sessions' | 'restart'): string | undefined {
  return OWNER.test(owner) ? join(stateDir, RESTARTS_DIR, `${owner}.${kind}.json`) : undefined;
}

async function readJson<T>(file: string, schema: z.ZodType<T>): Promise<T | undefined> {
  try {
    const text = await readPrivateFile(file, MAX_FILE_BYTES);
    const parsed = text === undefined ? undefined : schema.safeParse(JSON.parse(text));
    return parsed?.success ? parsed.data : undefined;
  } catch {
    return undefined; // Unreadable or not JSON: nothing to say, rather than a wrong reason.
  }
}

async function writeJson(stateDir: string, file: string, value: unknown): Promise<void> {
  await ensurePrivateSubdirAsync(join(stateDir, RESTARTS_DIR));
  await writePrivateFile(file, `${JSON.stringify(value)}\n`);
}

/** The extension, before a restart for a settings change: which keys changed (added to those of a restart not taken yet). */
export async function noteRestart(stateDir: string, owner: string, keys: readonly string[]): Promise<void> {
  const file = fileOf(stateDir, owner, 'restart');
  if (!file) return;
  const earlier = (await readJson(file, noteSchema))?.keys ?? [];
  await writeJson(stateDir, file, { at: new Date().toISOString(), keys: [...new Set([...earlier, ...keys])].sort() });
}

/**
 * A bridge's start: the sessions the window's previous bridge had and why they are gone, or
 * undefined when it had none. Both files are emptied: this bridge's sessions are its own.
 */
export async function takeRestart(stateDir: string, owner: string): Promise<{ sessions: string[]; reason: string } | undefined> {
  const sessionsFile = fileOf(stateDir, owner, 'sessions');
  const noteFile = fileOf(stateDir, owner, 'restart');
  if (!sessionsFile || !noteFile) return undefined;
  void pruneOld(stateDir);
  const [previous, note] = await Promise.all([readJson(sessionsFile, sessionsSchema), readJson(noteFile, noteSchema)]);
  await Promise.all([rm(sessionsFile, { force: true }), rm(noteFile, { force: true })]).catch(() => undefined);
  if (!previous || previous.sessions.length === 0) return undefined;
  const reason =
    note && note.keys.length > 0
      ? `the bridge restarted after a settings change (${note.keys.join(', ')}), which needs a new sandbox`
      : 'the bridge restarted, which ends every session';
  return { sessions: previous.sessions, reason };
}

/** The names of a bridge's sessions that ran code, written when one is added. */
export class SessionsWithState {
  private readonly names = new Set<string>();
  private writing: Promise<void> = Promise.resolve();
  private readonly stateDir: string;
  private readonly file: string | undefined;
  private readonly log: (message: string) => void;

  constructor(stateDir: string, owner: string, log: (message: string) => void) {
    this.stateDir = stateDir;
    this.file = fileOf(stateDir, owner, 'sessions');
    this.log = log;
  }

  add(session: string): void {
    const file = this.file;
    if (!file || this.names.has(session)) return;
    this.names.add(session);
    const value = { sessions: [...this.names] };
    this.writing = this.writing
      .then(() => writeJson(this.stateDir, file, value))
      .catch((error: Error) => this.log(`${file} not written (a restart will not name the sessions it reset): ${error.message}`));
  }

  /** Waits for the writes asked for so far. */
  flush(): Promise<void> {
    return this.writing;
  }
}

async function pruneOld(stateDir: string): Promise<void> {
  const dir = join(stateDir, RESTARTS_DIR);
  const names = await readdir(dir).catch(() => [] as string[]);
  const now = Date.now();
  for (const name of names) {
    const path = join(dir, name);
    const info = await stat(path).catch(() => undefined);
    if (info?.isFile() && now - info.mtimeMs > KEEP_MS) await rm(path, { force: true }).catch(() => undefined);
  }
}

// The audit record: append-only JSON lines in the state dir, one event per line, written as a
// run progresses (start, each tool call, end) so a crash loses at most the event in flight.
//
// Several bridges share one state dir (one per VS Code window, command-line runs), so:
// - every event is one write() on an O_APPEND descriptor, so lines of different writers never
//   interleave, and the size that decides a rotation is the file's, not a private counter;
// - a rotation (runs.jsonl -> runs.1.jsonl -> ... -> runs.<keep>.jsonl) happens under a lock
//   file, and only if no other writer rotated first; a writer whose file was rotated away (or
//   deleted) notices before its next event and reopens. An event that races a rotation lands
//   in runs.1.jsonl, which the reader reads too.
//
// One run cannot push the others out: its tool calls are logged in full up to a count and a
// byte budget, the rest summed up in one `tool-calls-omitted` line. Images go beside the log,
// within a per-run and a total budget (oldest pruned first), and leave with their run's line.
import { closeSync, existsSync, fstatSync, readdirSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { basename, join } from 'node:path';
import { runLogConfigSchema, type RunLogConfig } from '../../config/schema.ts';
import { redactUrlSecrets } from '../../config/url-secrets.ts';
import type { RunResult } from '../../sandbox/index.ts';
import {
  ensurePrivateDir,
  ensurePrivateSubdir,
  isRealDir,
  openPrivateFileSync,
  readPrivateFileSync,
  writePrivateFileSync,
} from '../private-files.ts';
import { outFilePath } from '../../shared/out-names.ts';
import type {
  ConfirmationEvent,
  RelayEvent,
  RunStartEvent,
  SandboxTier,
  SnippetSavedEvent,
  SnippetUseEvent,
  ToolCallEvent,
} from './events.ts';
import { IMAGES_DIR, RUN_LOG_FILE, RUN_LOG_LOCK, rotatedLogName } from './files.ts';
import { withLockSync } from '../lock.ts';

export { IMAGES_DIR, RUN_LOG_FILE } from './files.ts';
export type {
  ConfirmationAnswer,
  ConfirmationEvent,
  RelayEvent,
  SandboxTier,
  SnippetSavedEvent,
  SnippetUseEvent,
  ToolCallEvent,
} from './events.ts';

const IMAGE_EXTENSIONS: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/gif': 'gif', 'image/webp': 'webp' };
// Images, and the files a run left in /work/out (`<run>-out-<i>.dat`, pruned with the images).
const IMAGE_FILE = /^[A-Za-z0-9-]+\.(png|jpg|gif|webp|dat)$/;
const MAX_CODE_CHARS = 1024 * 1024;
const MAX_STREAM_CHARS = 64 * 1024;
const MAX_ARGUMENT_CHARS = 64 * 1024;
/** Distinct server.tool names counted one by one in an omitted-calls summary. */
const MAX_SUMMARY_TOOLS = 50;
/** After a rotation could not get the lock, appends go on and the next try waits this long. */
const ROTATE_RETRY_MS = 30_000;

/** The limits when none are given: the configuration's defaults. */
export const RUN_LOG_DEFAULTS: RunLogConfig = runLogConfigSchema.parse({});

/** The limits (config/schema.ts says what each one is), and who hears of problems. */
export interface RunLogOptions extends Partial<RunLogConfig> {
  /** Told when writing the log starts failing (with why) and when it works again (undefined). */
  onProblem?: (problem: string | undefined) => void;
}

/** Characters of a snippet's arguments kept in the log. */
export const MAX_SNIPPET_ARGUMENT_CHARS = 300;

/** What one run has used of its budget in the log. */
interface RunBudget {
  calls: number;
  bytes: number;
  /** Once over budget, every later call of the run is only counted. */
  over: boolean;
  omitted: number;
  omittedBytes: number;
  byTool: Map<string, number>;
  byOutcome: Map<string, number>;
}

/** A logged error without the credentials of any URL it quotes (a proxied server's URL, say). */
function errorOf(event: { error?: string }): { error?: string } {
  return event.error === undefined ? {} : { error: redactUrlSecrets(event.error) };
}

function cap(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit)}... [${text.length - limit} characters not logged]`;
}

function capJson(value: unknown, limit: number): unknown {
  const text = JSON.stringify(value) ?? 'null';
  return text.length <= limit ? value : { truncated: true, preview: text.slice(0, limit) };
}

const round = (ms: number) => Math.round(ms * 10) / 10;

/** An image (`mime`) or a /work/out file (`path`) in a run-end line. */
type BesideEntry = { mime?: string; path?: string; bytes: number; file?: string; skipped?: string };

export class RunLog {
  readonly file: string;
  private readonly dir: string;
  private readonly options: RunLogConfig;
  private readonly onProblem: ((problem: string | undefined) => void) | undefined;
  private fd: number | undefined;
  /** The open file's inode and device, to tell when runs.jsonl is another file now. */
  private openIdentity = { ino: -1, dev: -1 };
  private rotateAfter = 0;
  private currentProblem: string | undefined;
  /** When each open run started, so that a run that fails before it starts still has a duration. */
  private readonly startedAt = new Map<string, number>();
  private readonly budgets = new Map<string, RunBudget>();

  constructor(dir: string, options: RunLogOptions = {}) {
    this.dir = dir;
    this.file = join(dir, RUN_LOG_FILE);
    const { onProblem, ...limits } = options;
    this.options = { ...RUN_LOG_DEFAULTS, ...Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined)) };
    this.onProblem = onProblem;
  }

  /** Why the log is not being written, while it is not; undefined when all is well. */
  get problem(): string | undefined {
    return this.currentProblem;
  }

  /** Opens the log now, so that a state dir that cannot be written is said at start, not at the first run. */
  check(): string | undefined {
    try {
      this.open();
      this.setProblem(undefined);
    } catch (error) {
      this.close();
      this.setProblem(`cannot write the run log ${this.file}: ${(error as Error).message}`);
    }
    return this.currentProblem;
  }

  runStarted(event: RunStartEvent): void {
    this.startedAt.set(event.run, performance.now());
    this.budgets.set(event.run, newBudget());
    this.write({ type: 'run-start', time: new Date().toISOString(), ...event, code: cap(event.code, MAX_CODE_CHARS) });
  }

  toolCall(event: ToolCallEvent): void {
    let budget = this.budgets.get(event.run);
    if (!budget) this.budgets.set(event.run, (budget = newBudget()));
    const line = this.line({
      type: 'tool-call',
      time: new Date().toISOString(),
      ...event,
      ...errorOf(event),
      arguments: capJson(event.arguments, MAX_ARGUMENT_CHARS),
      durationMs: round(event.durationMs),
    });
    budget.over ||= budget.calls >= this.options.fullToolCallsPerRun || budget.bytes + line.length > this.options.maxToolCallBytesPerRun;
    if (!budget.over) {
      budget.calls++;
      budget.bytes += line.length;
      this.append(line);
      return;
    }
    budget.omitted++;
    budget.omittedBytes += line.length;
    const name = `${event.server}.${event.tool}`;
    const key = budget.byTool.has(name) || budget.byTool.size < MAX_SUMMARY_TOOLS ? name : '(other tools)';
    budget.byTool.set(key, (budget.byTool.get(key) ?? 0) + 1);
    budget.byOutcome.set(event.outcome, (budget.byOutcome.get(event.outcome) ?? 0) + 1);
  }

  /** A confirmation asked or answered: always logged in full (each one is a question to the user). */
  confirmation(event: ConfirmationEvent): void {
    this.append(
      this.line({
        type: 'confirmation',
        time: new Date().toISOString(),
        ...event,
        ...errorOf(event),
        arguments: capJson(event.arguments, MAX_ARGUMENT_CHARS),
        ...(event.waitedMs !== undefined ? { waitedMs: round(event.waitedMs) } : {}),
      }),
    );
  }

  /** A run_snippet call; logged in full (its arguments are shortened), outside the tool-call budget. */
  snippetUsed(event: SnippetUseEvent): void {
    const args = event.arguments === undefined ? {} : { arguments: cap(event.arguments, MAX_SNIPPET_ARGUMENT_CHARS) };
    this.write({
      type: 'snippet',
      time: new Date().toISOString(),
      ...event,
      name: event.name.slice(0, 64),
      sha256: event.sha256.slice(0, 64),
      ...args,
    });
  }

  /** A run's code saved as a snippet: the run log says which run the snippet came from. */
  snippetSaved(event: SnippetSavedEvent): void {
    this.write({ type: 'snippet-saved', time: new Date().toISOString(), ...event });
  }

  /** A relayed request of a proxied server: always logged (each may be a question to the user). */
  relay(event: RelayEvent): void {
    this.append(
      this.line({
        type: 'relay',
        time: new Date().toISOString(),
        ...event,
        waitedMs: round(event.waitedMs),
        ...(event.error ? { error: cap(redactUrlSecrets(event.error), 2000) } : {}),
      }),
    );
  }

  runEnded(result: RunResult, extra: { toolCalls: number; sandbox?: SandboxTier }): void {
    this.startedAt.delete(result.runId);
    this.summarizeOmitted(result.runId);
    this.write({
      type: 'run-end',
      time: new Date().toISOString(),
      run: result.runId,
      session: result.session,
      status: result.status,
      durationMs: round(result.durationMs),
      stdout: cap(result.stdout, MAX_STREAM_CHARS),
      stderr: cap(result.stderr, MAX_STREAM_CHARS),
      value: result.value === null ? null : cap(result.value, MAX_STREAM_CHARS),
      error: result.error,
      ...this.saveBeside(result),
      toolCalls: extra.toolCalls,
      ...(extra.sandbox ? { sandbox: extra.sandbox } : {}),
      truncated: result.truncated,
      sessionLost: result.sessionLost,
      ...(result.sessionChange ? { sessionChange: result.sessionChange } : {}),
    });
  }

  /** Also used for failures before a run could start (no runtime, bad image). */
  runFailed(event: { run: string; session: string; message: string }): void {
    const started = this.startedAt.get(event.run);
    this.startedAt.delete(event.run);
    this.summarizeOmitted(event.run);
    this.write({
      type: 'run-end',
      time: new Date().toISOString(),
      run: event.run,
      session: event.session,
      status: 'error',
      ...(started === undefined ? {} : { durationMs: round(performance.now() - started) }),
      error: { type: 'SandboxUnavailable', message: redactUrlSecrets(event.message), traceback: '' },
    });
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

  private summarizeOmitted(run: string): void {
    const budget = this.budgets.get(run);
    this.budgets.delete(run);
    if (!budget || budget.omitted === 0) return;
    this.write({
      type: 'tool-calls-omitted',
      time: new Date().toISOString(),
      run,
      count: budget.omitted,
      bytes: budget.omittedBytes,
      logged: budget.calls,
      byTool: Object.fromEntries(budget.byTool),
      byOutcome: Object.fromEntries(budget.byOutcome),
    });
  }

  /**
   * Images, and the files from /work/out, go beside the log (0600; the panel shows them) within
   * one per-run budget, images first, then one prune under the lock; the log names each file.
   */
  private saveBeside(result: RunResult): { images: BesideEntry[]; files?: BesideEntry[] } {
    const budget = { used: 0, saved: false };
    const images = result.images.map((image, i): BesideEntry => {
      const bytes = Buffer.from(image.data, 'base64');
      const ext = IMAGE_EXTENSIONS[image.mime];
      if (!ext) return { mime: image.mime, bytes: bytes.length };
      return { mime: image.mime, ...this.saveOne(result.runId, `${i}.${ext}`, bytes, budget) };
    });
    const files = result.files?.length
      ? result.files.map((out, i): BesideEntry => {
          // Logged by the name the result showed (cleaned: the sandbox chose it); saved under a name of ours.
          const path = outFilePath(out.path);
          if (out.data === undefined)
            return { path, bytes: out.bytes, ...(out.skipped ? { skipped: `not returned: ${out.skipped}` } : {}) };
          return { path, ...this.saveOne(result.runId, `out-${i}.dat`, Buffer.from(out.data, 'base64'), budget) };
        })
      : undefined;
    if (budget.saved) withLockSync(join(this.dir, RUN_LOG_LOCK), () => this.pruneImages(), { timeoutMs: 1000 });
    return files ? { images, files } : { images };
  }

  private saveOne(
    runId: string,
    suffix: string,
    bytes: Buffer,
    budget: { used: number; saved: boolean },
  ): { bytes: number; file?: string; skipped?: string } {
    if (!/^[A-Za-z0-9-]+$/.test(runId)) return { bytes: bytes.length };
    if (budget.used + bytes.length > this.options.maxImageBytesPerRun)
      return { bytes: bytes.length, skipped: 'over the per-run image budget (images and /work/out files together)' };
    try {
      const dir = join(this.dir, IMAGES_DIR);
      ensurePrivateSubdir(dir);
      const file = `${runId}-${suffix}`;
      writePrivateFileSync(join(dir, file), bytes);
      budget.used += bytes.length;
      budget.saved = true;
      return { bytes: bytes.length, file: `${IMAGES_DIR}/${file}` };
    } catch (error) {
      return { bytes: bytes.length, skipped: `not written: ${(error as Error).message}` };
    }
  }

  /** Keeps all images within their total budget, oldest first. */
  private pruneImages(): void {
    const dir = join(this.dir, IMAGES_DIR);
    // Never list or remove files through a link planted as images/.
    if (!isRealDir(dir)) return;
    let files: Array<{ path: string; size: number; mtimeMs: number }>;
    try {
      files = readdirSync(dir)
        .filter((name) => IMAGE_FILE.test(name))
        .flatMap((name) => {
          try {
            const stat = statSync(join(dir, name));
            return [{ path: join(dir, name), size: stat.size, mtimeMs: stat.mtimeMs }];
          } catch {
            return [];
          }
        });
    } catch {
      return;
    }
    let total = files.reduce((sum, f) => sum + f.size, 0);
    files.sort((a, b) => a.mtimeMs - b.mtimeMs);
    for (const file of files) {
      if (total <= this.options.maxImageBytes) break;
      rmSync(file.path, { force: true });
      total -= file.size;
    }
  }

  private line(event: Record<string, unknown>): Buffer {
    return Buffer.from(`${JSON.stringify(event)}\n`, 'utf8');
  }

  private write(event: Record<string, unknown>): void {
    this.append(this.line(event));
  }

  // Synchronous appends: each event is on disk before the next step of the run, in order.
  private append(line: Buffer): void {
    try {
      const size = this.open();
      if (size > 0 && size + line.length > this.options.maxFileBytes && Date.now() >= this.rotateAfter) this.rotate();
      writeSync(this.fd!, line);
      this.setProblem(undefined);
    } catch (error) {
      // The log must never take a run down, but its loss must be seen: the bridge says so
      // loudly and run_python results carry the problem until writing works again.
      this.close();
      this.setProblem(`cannot write the run log ${this.file}: ${(error as Error).message}`);
    }
  }

  private setProblem(problem: string | undefined): void {
    if (problem === this.currentProblem) return;
    this.currentProblem = problem;
    this.onProblem?.(problem);
  }

  /**
   * Opens runs.jsonl, again when the open file is no longer it (rotated by another writer,
   * deleted); returns its size. One stat of the path per event: the open file's identity is kept.
   */
  private open(): number {
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
        const oldest = rotated(this.options.keepFiles);
        if (existsSync(oldest)) {
          this.dropImagesOf(oldest);
          rmSync(oldest, { force: true });
        }
        for (let n = this.options.keepFiles - 1; n >= 1; n--) if (existsSync(rotated(n))) renameSync(rotated(n), rotated(n + 1));
        renameSync(this.file, rotated(1));
      },
      { timeoutMs: 1000 },
    );
    if (!done) this.rotateAfter = Date.now() + ROTATE_RETRY_MS;
    this.open();
  }

  /** Removes the images of the runs whose end is in a file that is leaving the log. */
  private dropImagesOf(file: string): void {
    let text: string;
    try {
      // A link or FIFO rotated in is not read, and no image is removed through a linked images/.
      const bytes = isRealDir(join(this.dir, IMAGES_DIR))
        ? readPrivateFileSync(file, this.options.maxFileBytes + 64 * 1024 * 1024)
        : undefined;
      if (!bytes) return;
      text = bytes.toString('utf8');
    } catch {
      return;
    }
    for (const line of text.split('\n')) {
      if (!line.includes('"run-end"') || !line.includes(`"${IMAGES_DIR}/`)) continue;
      try {
        const event = JSON.parse(line) as { type?: string; images?: Array<{ file?: unknown }>; files?: Array<{ file?: unknown }> };
        if (event.type !== 'run-end') continue;
        for (const image of [...(event.images ?? []), ...(event.files ?? [])]) {
          const name = typeof image.file === 'string' ? basename(image.file) : '';
          if (IMAGE_FILE.test(name)) rmSync(join(this.dir, IMAGES_DIR, name), { force: true });
        }
      } catch {
        // a half-written line: nothing to drop
      }
    }
  }
}

function newBudget(): RunBudget {
  return { calls: 0, bytes: 0, over: false, omitted: 0, omittedBytes: 0, byTool: new Map(), byOutcome: new Map() };
}

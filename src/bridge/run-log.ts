// The audit record: append-only JSON lines in the state dir, one event per line, written as a
// run progresses (start, each tool call, end) so a crash loses at most the event in flight.
// Rotated by size: runs.jsonl -> runs.1.jsonl -> ... -> runs.<keep>.jsonl.
import { closeSync, existsSync, mkdirSync, openSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { RunResult } from '../sandbox/session.ts';

export const RUN_LOG_FILE = 'runs.jsonl';
export const IMAGES_DIR = 'images';
const IMAGE_EXTENSIONS: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/gif': 'gif', 'image/webp': 'webp' };
const MAX_CODE_CHARS = 1024 * 1024;
const MAX_STREAM_CHARS = 64 * 1024;
const MAX_ARGUMENT_CHARS = 64 * 1024;

export interface RunLogOptions {
  maxBytes?: number;
  keep?: number;
}

export interface ToolCallEvent {
  run: string;
  server: string;
  tool: string;
  arguments: unknown;
  outcome: 'ok' | 'tool-error' | 'denied' | 'failed';
  durationMs: number;
  error?: string;
}

function cap(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit)}... [${text.length - limit} characters not logged]`;
}

function capJson(value: unknown, limit: number): unknown {
  const text = JSON.stringify(value) ?? 'null';
  return text.length <= limit ? value : { truncated: true, preview: text.slice(0, limit) };
}

export class RunLog {
  readonly file: string;
  private readonly dir: string;
  private readonly maxBytes: number;
  private readonly keep: number;
  private fd: number | undefined;
  private size = 0;
  /** When each open run started, so that a run that fails before it starts still has a duration. */
  private readonly startedAt = new Map<string, number>();

  constructor(dir: string, options: RunLogOptions = {}) {
    this.dir = dir;
    this.file = join(dir, RUN_LOG_FILE);
    this.maxBytes = options.maxBytes ?? 10 * 1024 * 1024;
    this.keep = options.keep ?? 5;
  }

  runStarted(event: { run: string; session: string; code: string; timeoutMs: number }): void {
    this.startedAt.set(event.run, performance.now());
    this.write({ type: 'run-start', time: new Date().toISOString(), ...event, code: cap(event.code, MAX_CODE_CHARS) });
  }

  toolCall(event: ToolCallEvent): void {
    this.write({
      type: 'tool-call',
      time: new Date().toISOString(),
      ...event,
      arguments: capJson(event.arguments, MAX_ARGUMENT_CHARS),
      durationMs: Math.round(event.durationMs * 10) / 10,
    });
  }

  runEnded(result: RunResult, extra: { toolCalls: number }): void {
    this.startedAt.delete(result.runId);
    this.write({
      type: 'run-end',
      time: new Date().toISOString(),
      run: result.runId,
      session: result.session,
      status: result.status,
      durationMs: Math.round(result.durationMs * 10) / 10,
      stdout: cap(result.stdout, MAX_STREAM_CHARS),
      stderr: cap(result.stderr, MAX_STREAM_CHARS),
      value: result.value === null ? null : cap(result.value, MAX_STREAM_CHARS),
      error: result.error,
      images: this.saveImages(result),
      toolCalls: extra.toolCalls,
      truncated: result.truncated,
      sessionLost: result.sessionLost,
    });
  }

  /** Also used for failures before a run could start (no runtime, bad image). */
  runFailed(event: { run: string; session: string; message: string }): void {
    const started = this.startedAt.get(event.run);
    this.startedAt.delete(event.run);
    this.write({
      type: 'run-end',
      time: new Date().toISOString(),
      run: event.run,
      session: event.session,
      status: 'error',
      ...(started === undefined ? {} : { durationMs: Math.round((performance.now() - started) * 10) / 10 }),
      error: { type: 'SandboxUnavailable', message: event.message, traceback: '' },
    });
  }

  /** Images go beside the log as files (the panel shows them); the log names each file. */
  private saveImages(result: RunResult): Array<{ mime: string; bytes: number; file?: string }> {
    return result.images.map((image, i) => {
      const bytes = Buffer.from(image.data, 'base64');
      const ext = IMAGE_EXTENSIONS[image.mime];
      if (!ext || !/^[A-Za-z0-9-]+$/.test(result.runId)) return { mime: image.mime, bytes: bytes.length };
      try {
        const dir = join(this.dir, IMAGES_DIR);
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        const file = `${result.runId}-${i}.${ext}`;
        writeFileSync(join(dir, file), bytes, { mode: 0o600 });
        return { mime: image.mime, bytes: bytes.length, file: `${IMAGES_DIR}/${file}` };
      } catch {
        return { mime: image.mime, bytes: bytes.length };
      }
    });
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  // Synchronous appends: each event is on disk before the next step of the run, in order.
  private write(event: Record<string, unknown>): void {
    try {
      const line = Buffer.from(`${JSON.stringify(event)}\n`, 'utf8');
      this.open();
      if (this.size > 0 && this.size + line.length > this.maxBytes) this.rotate();
      writeSync(this.fd!, line);
      this.size += line.length;
    } catch {
      // The log must never take a run down; a full disk shows up elsewhere soon enough.
    }
  }

  private open(): void {
    if (this.fd !== undefined) return;
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    this.fd = openSync(this.file, 'a', 0o600);
    this.size = statSync(this.file).size;
  }

  private rotate(): void {
    this.close();
    const rotated = (n: number) => join(this.dir, `runs.${n}.jsonl`);
    if (existsSync(rotated(this.keep))) rmSync(rotated(this.keep));
    for (let n = this.keep - 1; n >= 1; n--) if (existsSync(rotated(n))) renameSync(rotated(n), rotated(n + 1));
    renameSync(this.file, rotated(1));
    this.open();
  }
}

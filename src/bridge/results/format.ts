// What the model reads after a run. VS Code hands the model only the JSON of structuredContent;
// other clients read the text. Both are made from one view of the run: compact over complete
// (empty, null and default fields left out), one budget of characters for the output, no
// base64 as text, and each image once. The full record goes to the run log instead. A run is
// read once (readRun: what the run log records comes from it), then made into the tool's result
// in one step with the audit note and the byte cap (shapeResult).
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import {
  MAX_IMAGE_BASE64_CHARS,
  MAX_IMAGES_PER_RUN,
  MAX_OUT_FILE_BYTES,
  MAX_OUT_FILES,
  MAX_OUT_TOTAL_BYTES,
  type RunResult,
  type SessionChange,
} from '../../sandbox/index.ts';
import { KnownImages, replaceBase64, type Base64Kind, type FoundImage } from './base64-text.ts';
import { base64Bytes, base64Capacity, sizeText } from '../../shared/byte-size.ts';
import { cutToJson, jsonLength, shareBudget } from './budget.ts';
import { outFilePath } from '../../shared/out-names.ts';
import { plural } from '../../shared/plural.ts';
import { ACTIVE_IMAGE_REASON, isActiveImage, RESULT_IMAGE_BYTES, ResultImages } from './images.ts';

const STATUSES = ['ok', 'error', 'timeout', 'cancelled'] as const;
const CHANGES = ['reaped', 'evicted', 'reset', 'lost'] as const;

/**
 * structuredContent of run_python (also its outputSchema). Only `status` is always there;
 * `durationMs` is there for every run that ran (not for a failure before the code could start).
 */
export const runViewShape = {
  status: z.enum(STATUSES),
  /** Why the session's earlier state was gone when this run started. */
  sessionChange: z.object({ kind: z.enum(CHANGES), reason: z.string() }).optional(),
  stdout: z.string().optional(),
  stderr: z.string().optional(),
  /** repr() of the last bare expression, when it is not None. */
  value: z.string().optional(),
  /** `traceback`: the frames, without the last line that `type` and `message` already say. */
  error: z.object({ type: z.string(), message: z.string(), traceback: z.string().optional() }).optional(),
  /** Images attached to the result. */
  images: z.number().optional(),
  /**
   * Files the code wrote under /work/out: small UTF-8 text inline (`text`), others attached as
   * embedded resources (`attached`), or named with why not (`note`).
   */
  files: z
    .array(
      z.object({
        path: z.string(),
        bytes: z.number(),
        text: z.string().optional(),
        attached: z.boolean().optional(),
        note: z.string().optional(),
      }),
    )
    .optional(),
  /** What was cut or left out, with what to do about it. */
  notes: z.array(z.string()).optional(),
  truncated: z.boolean().optional(),
  /** The session's state was lost during this run (the next run starts fresh). */
  sessionLost: z.boolean().optional(),
  toolCalls: z.number().optional(),
  /** Named when it is not "default", or when its state changed. */
  session: z.string().optional(),
  durationMs: z.number().optional(),
  /** Said while the run log cannot be written. */
  auditLog: z.string().optional(),
};
export const runViewSchema = z.object(runViewShape);
export type RunView = z.infer<typeof runViewSchema>;

export interface ShapeInput {
  result: RunResult;
  toolCalls: number;
  /** Images the run's tool calls returned: attached when the code returns them. */
  toolImages?: readonly FoundImage[];
  /** Characters of output the model gets (sandbox.resultChars). */
  budget: number;
  /** Image bytes the result carries (RESULT_IMAGE_BYTES). */
  imageBudget?: number;
}

/** What the result is made with beyond the run: known only once the run log has its record. */
export interface FinishInput {
  /** Says that the run log is not being written (undefined: it is). */
  audit?: string;
  /** The whole result as JSON, in bytes, above which it goes without images and attached files (undefined: no cap). */
  maxBytes?: number;
}

/**
 * The run read once: its output cut to the budget, its images and files placed. Nothing in it
 * changes; the run log records `recorded` before the result is made from it (shapeResult).
 */
export interface RunReading {
  readonly result: RunResult;
  readonly toolCalls: number;
  readonly out: string;
  readonly err: string;
  readonly val: string;
  readonly error: { type: string; message: string; frames: string; ownHeadline: boolean } | undefined;
  /** Some output was cut, here or by the capture. */
  readonly cut: boolean;
  /** Notes that do not depend on what is attached. */
  readonly notes: readonly string[];
  /** Attached, in order: emitted first, then returned. */
  readonly images: readonly FoundImage[];
  /** Distinct images left out for the budget, and for their type. */
  readonly dropped: number;
  readonly refused: number;
  readonly imageBudgetText: string;
  readonly fileViews: readonly Readonly<NonNullable<RunView['files']>[number]>[];
  /** Files from /work/out attached as embedded resources, in order. */
  readonly files: readonly OutAttachment[];
  /** Every distinct image the run emitted or returned (the run log keeps them). */
  readonly recorded: readonly FoundImage[];
}

export interface ShapedRun {
  view: RunView;
  text: string;
  /** Attached, in order: emitted first, then returned. */
  images: readonly FoundImage[];
  /** Every distinct image the run emitted or returned (the run log keeps them). */
  recorded: readonly FoundImage[];
  /** Files from /work/out attached as embedded resources, in order. */
  files: readonly OutAttachment[];
  /** What the tool call returns: the text, then images, audio and files; the view as structuredContent. */
  reply: CallToolResult;
}

export interface OutAttachment {
  path: string;
  mime: string;
  /** base64 */
  data: string;
}

/** A file from /work/out at most this big, and valid UTF-8, is shown inline in the text. */
const INLINE_FILE_BYTES = 8 * 1024;
/** Inline text of all files of one result together; further text files are attached. */
const INLINE_FILES_TOTAL = 16 * 1024;
const FILE_SKIPS: Record<string, string> = {
  count: `not returned: more than ${MAX_OUT_FILES} files`,
  size: `not returned: over ${sizeText(MAX_OUT_FILE_BYTES)}`,
  total: `not returned: over ${sizeText(MAX_OUT_TOTAL_BYTES)} for all files of a run`,
  listing: 'not returned: too many entries in /work/out',
};
const MIMES: Record<string, string> = {
  txt: 'text/plain',
  md: 'text/markdown',
  csv: 'text/csv',
  json: 'application/json',
  html: 'text/html',
  xml: 'application/xml',
  // An SVG comes back as its text, never labelled as an image a client might render (and run).
  svg: 'text/plain',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  pdf: 'application/pdf',
  zip: 'application/zip',
  parquet: 'application/vnd.apache.parquet',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
};

function outFileMime(path: string): string {
  const ext = /\.([A-Za-z0-9]+)$/.exec(path)?.[1]?.toLowerCase() ?? '';
  return MIMES[ext] ?? 'application/octet-stream';
}

function utf8Text(data: string): string | undefined {
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(data, 'base64'));
    // Control characters (but tab and line ends) say binary, whatever the encoding allows.
    return /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(text) ? undefined : text;
  } catch {
    return undefined;
  }
}

const CUT_HINT = 'print less, or summarise in code (counts, a slice, the lines that matter)';

/** The run as the model should read it, in both forms, when nothing is recorded between reading and shaping. */
export function shapeRun(input: ShapeInput & FinishInput): ShapedRun {
  return shapeResult(readRun(input), input);
}

/** Reads the run once: cuts its output to the budget, places its images and files. */
export function readRun(input: ShapeInput): RunReading {
  const { result, toolCalls } = input;
  const images = new ResultImages(input.imageBudget);
  const known = new KnownImages([...(input.toolImages ?? []), ...result.images]);
  for (const image of result.images) images.attach(image);

  // The value first: an image there is returned, so attached; elsewhere only named.
  const returned = (found: Base64Kind): string => {
    if (found.kind === 'data') return dataPlaceholder(found.bytes);
    const size = imageSize(found.image);
    const attached = images.attach(found.image);
    if (attached === 'refused') return `<${mediaWord(found.image)} ${found.image.mime} ${size}, not attached: ${ACTIVE_IMAGE_REASON}>`;
    return attached === 'attached'
      ? `<${mediaWord(found.image)} ${found.image.mime} ${size}, attached>`
      : `<${mediaWord(found.image)} ${found.image.mime} ${size}, not attached: over the ${images.budgetText()} image budget of a result>`;
  };
  const mentioned = (found: Base64Kind): string => {
    if (found.kind === 'data') return dataPlaceholder(found.bytes);
    const size = imageSize(found.image);
    if (isActiveImage(found.image)) return `<${mediaWord(found.image)} ${found.image.mime} ${size}, not attached: ${ACTIVE_IMAGE_REASON}>`;
    return images.isAttached(found.image)
      ? `<${mediaWord(found.image)} ${found.image.mime} ${size}, attached>`
      : `<${mediaWord(found.image)} ${found.image.mime} ${size}, not attached: return it as the last value to show it>`;
  };
  const value = result.value === null ? '' : replaceBase64(result.value, known, returned);
  const stdout = replaceBase64(result.stdout, known, mentioned);
  const stderr = replaceBase64(result.stderr, known, mentioned);
  const error = result.error ? splitError(result.error) : undefined;
  if (error) {
    error.message = replaceBase64(error.message, known, mentioned);
    error.frames = replaceBase64(error.frames, known, mentioned);
  }

  // One budget for all the output; the capture's own cuts (sandbox.maxOutputChars) count in.
  const parts = [stdout, stderr, value, error?.message ?? '', error?.frames ?? ''];
  const earlier = [capturedCut(result.omitted.stdout), capturedCut(result.omitted.stderr), undefined, undefined, undefined];
  // Measured as JSON (what VS Code hands the model): newlines and quotes count twice there.
  const keep = shareBudget(parts.map(jsonLength), input.budget);
  const fitted = parts.map((part, i) => cutToJson(part, keep[i]!, earlier[i]));
  const [out, err, val, message, frames] = fitted.map((f) => f.text) as [string, string, string, string, string];
  const cut = fitted.some((f) => f.cut > 0) || result.omitted.stdout > 0 || result.omitted.stderr > 0;

  const notes: string[] = [];
  if (cut) {
    const total = parts.reduce((n, p) => n + p.length, 0) + result.omitted.stdout + result.omitted.stderr;
    const kept = fitted.reduce((n, f) => n + f.text.length, 0);
    notes.push(`output cut to ${fmt(kept)} of about ${fmt(total)} characters, head and tail kept: ${CUT_HINT}`);
  }
  if (result.omitted.images > 0)
    notes.push(
      `${plural(result.omitted.images, 'image')} not kept: at most ${MAX_IMAGES_PER_RUN} per run, ${sizeText(base64Capacity(MAX_IMAGE_BASE64_CHARS))} each`,
    );

  // Files from /work/out: small text inline, the rest attached within what the images left of the budget.
  const fileBudget = Math.max(0, (input.imageBudget ?? RESULT_IMAGE_BYTES) - images.attached.reduce((n, i) => n + base64Bytes(i.data), 0));
  const attachedFiles: OutAttachment[] = [];
  const fileViews: NonNullable<RunView['files']> = [];
  let inlineUsed = 0;
  let fileBytesUsed = 0;
  for (const file of result.files ?? []) {
    // The frame's path is the sandbox's word: shown (and put in the resource's URI) cleaned.
    const path = outFilePath(file.path);
    const entry: NonNullable<RunView['files']>[number] = { path: `/work/out/${path}`, bytes: file.bytes };
    fileViews.push(entry);
    if (file.data === undefined) {
      entry.note = FILE_SKIPS[file.skipped ?? 'size'] ?? 'not returned';
      continue;
    }
    const text = file.bytes <= INLINE_FILE_BYTES ? utf8Text(file.data) : undefined;
    if (text !== undefined && inlineUsed + text.length <= INLINE_FILES_TOTAL) {
      entry.text = text;
      inlineUsed += text.length;
    } else if (fileBytesUsed + file.bytes <= fileBudget) {
      entry.attached = true;
      fileBytesUsed += file.bytes;
      attachedFiles.push({ path, mime: outFileMime(path), data: file.data });
    } else {
      entry.note = `not attached: over the ${sizeText(input.imageBudget ?? RESULT_IMAGE_BYTES)} attachment budget of a result (the run log keeps it)`;
    }
  }

  return {
    result,
    toolCalls,
    out,
    err,
    val,
    error: error && { type: error.type, message, frames, ownHeadline: error.ownHeadline },
    cut,
    notes,
    images: images.attached,
    dropped: images.dropped,
    refused: images.refused,
    imageBudgetText: images.budgetText(),
    fileViews,
    files: attachedFiles,
    recorded: images.seen,
  };
}

/**
 * The result the model gets, made once from the reading, the audit note and the byte cap: over
 * the cap, it goes without its images and attached files, and says so (the run log keeps them).
 */
export function shapeResult(reading: RunReading, finish: FinishInput = {}): ShapedRun {
  const whole = build(reading, finish.audit, false);
  const over = (shaped: ShapedRun) => Buffer.byteLength(JSON.stringify(shaped.reply)) > finish.maxBytes!;
  if (finish.maxBytes === undefined || whole.reply.content.length <= 1 || !over(whole)) return whole;
  return build(reading, finish.audit, true);
}

/** Where the user finds the files of /work/out that came back attached (or were kept back). */
export const FILES_KEPT =
  'the user finds these files with the run: in VS Code, Sandbox Runs > this run > Save As; elsewhere, beside the run log in the state folder';

/** The view, text and reply of a reading; `bare`: without images and attached files. */
function build(reading: RunReading, audit: string | undefined, bare: boolean): ShapedRun {
  const { result, toolCalls, error } = reading;
  const images = bare ? [] : reading.images;
  const files = bare ? [] : reading.files;
  const dropped = bare ? reading.dropped + reading.images.length : reading.dropped;
  const fileViews = reading.fileViews.map((entry) => {
    if (!bare || !entry.attached) return { ...entry };
    const { attached: _attached, ...rest } = entry;
    return { ...rest, note: 'not attached: the result would be too big (the run log keeps it)' };
  });
  const allNotes = [...reading.notes];
  if (dropped > 0) {
    allNotes.push(
      `${plural(dropped, 'image')} not attached: over the ${reading.imageBudgetText} image budget of a result; emit fewer or smaller images`,
    );
  }
  if (reading.refused > 0) allNotes.push(`${plural(reading.refused, 'image')} not attached: ${ACTIVE_IMAGE_REASON}`);
  // The model cannot hand a file over: it can say where the user finds it (unless the log is not written).
  if (!audit && fileViews.some((f) => f.attached || f.note?.includes('the run log keeps it'))) allNotes.push(FILES_KEPT);
  const view: RunView = { status: result.status };
  if (result.sessionChange) view.sessionChange = result.sessionChange;
  if (reading.out) view.stdout = reading.out;
  if (reading.err) view.stderr = reading.err;
  if (result.value !== null) view.value = reading.val;
  if (error) view.error = { type: error.type, message: error.message, ...(error.frames ? { traceback: error.frames } : {}) };
  if (images.length > 0) view.images = images.length;
  if (fileViews.length > 0) view.files = fileViews;
  if (allNotes.length > 0) view.notes = allNotes;
  if (result.truncated || reading.cut || dropped > 0 || reading.refused > 0 || fileViews.some((f) => f.note)) view.truncated = true;
  if (result.sessionLost) view.sessionLost = true;
  if (toolCalls > 0) view.toolCalls = toolCalls;
  if (result.session !== 'default' || result.sessionChange) view.session = result.session;
  view.durationMs = Math.round(result.durationMs);
  if (audit) view.auditLog = audit;
  const text = renderText(view, error?.ownHeadline ?? false);
  return { view, text, images, recorded: reading.recorded, files, reply: callResult(view, text, images, files) };
}

/** The tool call's result: the text first, then what is attached; the view as structuredContent. */
function callResult(view: RunView, text: string, images: readonly FoundImage[], files: readonly OutAttachment[]): CallToolResult {
  const content: CallToolResult['content'] = [{ type: 'text', text }];
  for (const image of images) {
    // Audio a tool returned is attached like its images (and within the same budget).
    content.push(
      image.mime.startsWith('audio/')
        ? { type: 'audio', data: image.data, mimeType: image.mime }
        : { type: 'image', data: image.data, mimeType: image.mime },
    );
  }
  for (const file of files) {
    // Files the code left in /work/out: embedded resources, named by their path in the sandbox.
    content.push({
      type: 'resource',
      resource: {
        uri: `sandbox:///work/out/${file.path.split('/').map(encodeURIComponent).join('/')}`,
        mimeType: file.mime,
        blob: file.data,
      },
    });
  }
  return { content, structuredContent: view, isError: view.status !== 'ok' };
}

/** The text form: the same view, read top to bottom. */
export function renderText(view: RunView, errorHasHeadline = false): string {
  const lines: string[] = [];
  if (view.sessionChange) lines.push(`[${changeLine(view.session ?? 'default', view.sessionChange)}]`);
  if (view.stdout) lines.push(view.stdout.replace(/\n$/, ''));
  if (view.stderr) lines.push(`[stderr]\n${view.stderr.replace(/\n$/, '')}`);
  if (view.value !== undefined) lines.push(`Out: ${view.value}`);
  if (view.error) {
    const { type, message, traceback } = view.error;
    const headline = message ? `${type}: ${message}` : type;
    lines.push(errorHasHeadline && traceback ? traceback : [traceback, headline].filter(Boolean).join('\n'));
  }
  for (const file of view.files ?? []) {
    const head = `[file ${file.path}, ${sizeText(file.bytes)}`;
    if (file.text !== undefined) lines.push(`${head}]\n${file.text.replace(/\n$/, '')}\n[end of ${file.path}]`);
    else lines.push(`${head}: ${file.attached ? 'attached' : (file.note ?? 'not returned')}]`);
  }
  if (lines.length === 0) lines.push('(no output)');
  if (view.status !== 'ok' && !view.error) lines.push(`[${view.status}]`);
  for (const note of view.notes ?? []) lines.push(`[${note}]`);
  const facts = [
    view.images ? `${plural(view.images, 'image')} attached` : '',
    view.toolCalls ? plural(view.toolCalls, 'tool call') : '',
  ].filter(Boolean);
  if (facts.length > 0) lines.push(`[${facts.join('; ')}]`);
  if (view.auditLog) lines.push(`[${view.auditLog}]`);
  return lines.join('\n');
}

/** The one line a run starts with when its session's state was gone. */
function changeLine(session: string, change: SessionChange): string {
  return `session "${session}" was ${change.kind}: ${change.reason}. This run started with a fresh interpreter; earlier variables and imports are gone.`;
}

function fmt(n: number): string {
  return n.toLocaleString('en-US');
}

function dataPlaceholder(bytes: number): string {
  return `<base64 data, ${sizeText(bytes)}, not shown>`;
}

/** "image", or "audio" for a tool's audio (attached the same way). */
function mediaWord(image: FoundImage): string {
  return image.mime.startsWith('audio/') ? 'audio' : 'image';
}

function imageSize(image: FoundImage): string {
  return sizeText(base64Bytes(image.data));
}

/** The line sandbox.maxOutputChars leaves where it cut a stream (see sandbox/sessions/capped-text.ts). */
function capturedCut(omitted: number): { marker: string; cut: number } | undefined {
  return omitted > 0 ? { marker: `\n... [${omitted} characters omitted] ...\n`, cut: omitted } : undefined;
}

interface SplitError {
  type: string;
  message: string;
  /** The traceback without its last line when that line is the type and message. */
  frames: string;
  /** The frames still end with their own headline (a SyntaxError's, say): the text adds none. */
  ownHeadline: boolean;
}

/** Keeps the message once: the traceback's last line repeats it. */
export function splitError(error: { type: string; message: string; traceback: string }): SplitError {
  const traceback = error.traceback.replace(/\s+$/, '');
  const message = error.message.replace(/\s+$/, '');
  let frames = traceback;
  let ownHeadline: boolean;
  const lastLine = traceback.slice(traceback.lastIndexOf('\n') + 1);
  if (message && traceback.endsWith(message)) {
    frames = traceback.slice(0, traceback.lastIndexOf('\n', traceback.length - message.length - 1) + 1);
    ownHeadline = false;
  } else if (!message && lastLine.replace(/:$/, '').endsWith(error.type)) {
    frames = traceback.slice(0, Math.max(0, traceback.lastIndexOf('\n')));
    ownHeadline = false;
  } else {
    ownHeadline = message !== '' && traceback.includes(message);
  }
  frames = frames.replace(/\s+$/, '');
  if (frames === 'Traceback (most recent call last):') frames = '';
  return { type: error.type, message: error.message, frames, ownHeadline };
}

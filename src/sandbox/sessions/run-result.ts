// What one run gives back: its result (status, output, value or error, images, files from
// /work/out) and the caps that bound it, which the kernel's own caps match.
import type { KernelError } from '../protocol/messages.ts';

export type RunStatus = 'ok' | 'error' | 'timeout' | 'cancelled';

export interface RunImage {
  mime: string;
  /** base64 */
  data: string;
}

/** Why a run found its session's earlier state gone (said in the result, with the reason). */
export interface SessionChange {
  kind: 'reaped' | 'evicted' | 'reset' | 'lost';
  reason: string;
}

/** A file from /work/out: its content (base64) unless a cap kept it back. */
export interface RunFile {
  path: string;
  bytes: number;
  data?: string;
  /** Why the content is not here: over the count, one file's size, the run's total, or the listing cut. */
  skipped?: 'count' | 'size' | 'total' | 'listing';
}

/** Files from /work/out kept per run (the kernel's own caps are the same). */
export const MAX_OUT_FILES = 20;
export const MAX_OUT_FILE_BYTES = 4 * 1024 * 1024;
export const MAX_OUT_TOTAL_BYTES = 8 * 1024 * 1024;
/** File entries (with or without content) kept per run. */
export const MAX_OUT_ENTRIES = 201;

export const MAX_IMAGES_PER_RUN = 16;
/** 8 MiB of image bytes, as base64 (the kernel refuses bigger images with a ValueError). */
export const MAX_IMAGE_BASE64_CHARS = Math.ceil((8 * 1024 * 1024) / 3) * 4;

export interface RunResult {
  runId: string;
  session: string;
  status: RunStatus;
  stdout: string;
  stderr: string;
  /** repr() of the last bare expression, when it was not None. */
  value: string | null;
  error: KernelError | null;
  images: RunImage[];
  /** Files the code left under /work/out (the kernel sends them and empties the folder). */
  files?: RunFile[];
  durationMs: number;
  /** Characters cut from the middle of stdout / stderr (0 when nothing was cut). */
  omitted: { stdout: number; stderr: number; images: number };
  truncated: boolean;
  /** The session's interpreter is gone (killed, crashed, out of memory); state was lost. */
  sessionLost: boolean;
  /** The session's state was gone before this run started (not for a brand-new session). */
  sessionChange?: SessionChange;
  /** This run started a new container (a cold start). */
  coldStart: boolean;
  /** Requests the code made to the host (tool calls). */
  requests: number;
}

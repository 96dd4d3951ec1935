// The messages exchanged with the kernel. Kernel-to-host messages are untrusted: each frame is
// parsed with these schemas and anything else ends the session. Host-to-kernel messages are
// typed only, since the host writes them. The kernel caps every field where it makes it, well
// below these limits, so that nothing user code prints or raises ends its session.
import { z } from 'zod';
import { MAX_DISTRIBUTION_NAME_CHARS, MAX_DISTRIBUTIONS } from '../image/distributions.ts';
import type { ErrorKind } from '../../shared/error-kinds.ts';

const runId = z.string().min(1).max(64);

/** Per-field caps: a frame is already size-limited, these keep each part sane. */
const MAX_TEXT = 16 * 1024 * 1024;

export const kernelErrorSchema = z.object({
  type: z.string().max(256),
  message: z.string().max(64 * 1024),
  traceback: z.string().max(256 * 1024),
});
export type KernelError = z.infer<typeof kernelErrorSchema>;

export const kernelMessageSchema = z.discriminatedUnion('t', [
  z.object({
    t: z.literal('ready'),
    python: z.string().max(64),
    pid: z.number().int(),
    /** "installed", or why the kernel's own seccomp filter is not. */
    seccomp: z.string().max(200).optional(),
    /** What the container's PID 1 is (kernel/pid1.py), in words. */
    init: z.string().max(200).optional(),
    /** A fresh container's third-party distributions (image/distributions.ts); `distsMore` counts those left out. */
    dists: z.array(z.string().min(1).max(MAX_DISTRIBUTION_NAME_CHARS)).max(MAX_DISTRIBUTIONS).optional(),
    distsMore: z.number().int().nonnegative().max(1_000_000).optional(),
  }),
  z.object({
    t: z.literal('out'),
    run: runId,
    stream: z.enum(['stdout', 'stderr']),
    data: z.string().max(MAX_TEXT),
  }),
  z.object({
    t: z.literal('image'),
    run: runId,
    mime: z.enum(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/svg+xml']),
    data: z
      .string()
      .max(MAX_TEXT)
      .regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64'),
  }),
  z.object({
    t: z.literal('file'),
    run: runId,
    /** Relative to /work/out. */
    path: z.string().min(1).max(500),
    bytes: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
    /** The content, base64; absent when the file was over a cap (`skipped` says which). */
    data: z
      .string()
      .max(MAX_TEXT)
      .regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64')
      .optional(),
    skipped: z.enum(['count', 'size', 'total', 'listing']).optional(),
  }),
  z.object({
    t: z.literal('done'),
    run: runId,
    status: z.enum(['ok', 'error', 'interrupted']),
    value: z.string().max(MAX_TEXT).nullable(),
    error: kernelErrorSchema.nullable(),
    /**
     * The exec's token, echoed. User code shares the kernel's process and can call its send
     * function; a `done` without the right token is ignored. Code that digs the token out of
     * the kernel's memory can still end its run early, but not unnoticed: its requests after
     * that end are refused and put on record, and the real `done` that follows marks the
     * forgery, so the interpreter is restarted (sessions/run-requests.ts watchBetweenRuns).
     */
    token: z.string().max(64).nullable().optional(),
    /** Threads of the code still alive after an interrupted run: the host restarts the interpreter. */
    leftoverThreads: z.number().int().positive().max(1_000_000).optional(),
  }),
  /** The code caught its interrupt and went on (or ignores SIGINT): the host need not wait out the grace. */
  z.object({ t: z.literal('ignored'), run: runId }),
  z.object({
    t: z.literal('req'),
    id: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
    run: runId,
    method: z.string().min(1).max(64),
    params: z.unknown(),
  }),
]);
export type KernelMessage = z.infer<typeof kernelMessageSchema>;

export type HostMessage =
  | { t: 'exec'; run: string; code: string; token: string }
  | { t: 'interrupt'; run: string }
  /** A fresh interpreter in the same container: the kernel execs `source`, then says `ready`. */
  | { t: 'restart'; source: string }
  /**
   * The workspace snapshot of a remote engine's sandbox (container/workspace-snapshot.ts):
   * `begin` empties /workspace, `data` carries the next bytes of its tar (base64), `end`
   * finishes it and makes every file read-only.
   */
  | { t: 'ws'; op: 'begin' }
  | { t: 'ws'; op: 'data'; data: string }
  /** `text`: what the copy is, for capability_summary() ("snapshot of ... taken at ..."), or why there is none. */
  | { t: 'ws'; op: 'end'; text: string }
  | { t: 'res'; id: number; ok: true; result: unknown }
  | { t: 'res'; id: number; ok: false; error: { type: string; kind: ErrorKind; message: string; details?: object } };

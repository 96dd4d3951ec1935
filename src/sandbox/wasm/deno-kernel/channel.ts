// What the WebAssembly kernel's main thread (host.ts) and its worker (worker.ts) exchange: the
// messages on their private port, and the slots of the shared control buffer.

/** Int32 slots of the shared control buffer. */
export const CONTROL = {
  /** 1 once the main thread has put a synchronous request's reply in the reply buffer. */
  replyState: 0,
  /** That reply's length in bytes. */
  replyLength: 1,
  /** The id of that reply. */
  replyId: 2,
  /** The id of the synchronous request the worker waits for (0: none). */
  syncId: 3,
  /** Characters of output posted by the worker and not yet written by the main thread. */
  outboxBytes: 4,
  /** 1 when the host interrupted the run in progress. */
  interrupted: 5,
} as const;
export const CONTROL_SLOTS = 8;

/** Output waiting for the host beyond this blocks the code that prints (back-pressure). */
export const OUTBOX_LIMIT_BYTES = 2 * 1024 * 1024;
/** The largest reply to a synchronous request (the reply buffer grows up to this). */
export const MAX_SYNC_REPLY_BYTES = 64 * 1024 * 1024;

export interface WorkerInit {
  port: MessagePort;
  /** file: URL of the Pyodide folder, ending in a slash. */
  pyodideUrl: string;
  /** The kernel's Python source (sandbox/wasm/source.ts), as the host sent it. */
  source: string;
  control: SharedArrayBuffer;
  /** Pyodide's interrupt buffer (its first byte: 2, SIGINT, raises KeyboardInterrupt in running code), 4 bytes to wait on. */
  interrupt: SharedArrayBuffer;
  /** Growable: the main thread grows it to fit a reply. */
  reply: SharedArrayBuffer;
  /** The cap on WebAssembly memory (Python's heap). */
  memoryBytes: number;
  /** A started interpreter's memory (make-snapshot.ts) to restore instead of starting CPython. */
  snapshot?: Uint8Array;
}

export type ToWorker = { k: 'exec'; code: string } | { k: 'interrupt' } | { k: 'res'; id: number; text: string };

export type FromWorker =
  | { k: 'ready'; python: string }
  | { k: 'failed'; message: string }
  | { k: 'out'; stream: 'stdout' | 'stderr'; data: string }
  | { k: 'image'; mime: string; data: string }
  /** A `file` frame's fields but `t` and `run`, as JSON. */
  | { k: 'file'; frame: string }
  /** `params` is JSON text. */
  | { k: 'req'; id: number; method: string; params: string; sync: boolean }
  /** The code caught its interrupt and went on. */
  | { k: 'ignored' }
  /** `outcome` is JSON: status, value, error. */
  | { k: 'done'; outcome: string };

/** Characters of output in one `out` frame: the host refuses an `out` frame over 1 MB. */
export const OUT_CHUNK_CHARS = 64 * 1024;

/** The file system path of a file: URL (on Windows without the slash before the drive). */
export function pathOf(url: string | URL): string {
  const path = decodeURIComponent(new URL(url).pathname);
  return /^\/[A-Za-z]:/.test(path) ? path.slice(1) : path;
}

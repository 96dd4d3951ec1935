// The WebAssembly kernel: a Deno program that speaks the container kernel's protocol on its
// stdin and stdout (see src/sandbox/container/protocol), so the sessions layer can run it in
// place of a container. Python is Pyodide, run in a worker (worker.ts); this main thread reads
// frames, passes execs, interrupts and replies to the worker, and alone writes frames.
//
// Started with no permission but reading the Pyodide folder and this one (no network, no
// environment, no processes, no writes, no FFI, no system information); the worker drops even
// those reads before any Python runs. The Python it runs comes from the host on stdin, so no
// other folder need be readable. See docs/wasm.md.
//
//   deno run --no-prompt --allow-read=<pyodide>,<this folder>[,<snapshot>] --unstable-worker-options host.ts \
//     --pyodide=<pyodide> [--memory-mb=512] [--spare] [--snapshot=<file>]
//
// With --snapshot, every interpreter is restored from that file (make-snapshot.ts made it), which
// skips CPython's start; without it, or when the file cannot be read, each starts from scratch.
//
// Like the container kernel it first reads `<length>\n` and that many bytes, its Python source
// (sandbox/wasm/source.ts: the container kernel's portable files, then deno-kernel's), which
// every interpreter it starts runs; then frames: a 4-byte big-endian length and UTF-8 JSON.
import type { FromWorker, ToWorker, WorkerInit } from './channel.ts';
import { CONTROL, CONTROL_SLOTS, MAX_SYNC_REPLY_BYTES, pathOf } from './channel.ts';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Host frames over this are refused (the host writes them: a cap only against mistakes). */
const MAX_HOST_FRAME_BYTES = 256 * 1024 * 1024;
/** The kernel's Python source is far smaller: a cap only against a wrong bootstrap. */
const MAX_SOURCE_BYTES = 4 * 1024 * 1024;
const DEFAULT_MEMORY_MB = 512;
/**
 * The process may use this much beyond the WebAssembly cap (the runtime itself, a spare, the
 * JavaScript objects Python code can make); past it the interpreter is ended. V8's own heap
 * limit (command.ts) is set above it, so that it is this watch that acts, not V8's abort.
 */
const PROCESS_HEADROOM_MB = 512;
const MEMORY_WATCH_MS = 50;

interface Options {
  pyodideUrl: string;
  /** The kernel's Python source, from the bootstrap. */
  source: string;
  memoryBytes: number;
  /** Keep a second interpreter started for the next restart. */
  spare: boolean;
  /** The interpreter snapshot's bytes, read once at the start. */
  snapshot?: Uint8Array;
}

function parseOptions(args: readonly string[]): Omit<Options, 'source'> {
  let pyodide: string | undefined;
  let memoryMb = DEFAULT_MEMORY_MB;
  let spare = false;
  let snapshot: Uint8Array | undefined;
  for (const arg of args) {
    if (arg === '--spare') spare = true;
    else if (arg.startsWith('--pyodide=')) pyodide = arg.slice('--pyodide='.length);
    else if (arg.startsWith('--memory-mb=')) memoryMb = Number(arg.slice('--memory-mb='.length));
    else if (arg.startsWith('--snapshot=')) snapshot = readSnapshot(arg.slice('--snapshot='.length));
    else throw new Error(`unknown argument ${arg}: expected --pyodide=DIR, --memory-mb=N, --spare and --snapshot=FILE`);
  }
  if (!pyodide) throw new Error('--pyodide=DIR is required: the folder of the pyodide npm package');
  if (!Number.isInteger(memoryMb) || memoryMb < 64 || memoryMb > 4096) throw new Error('--memory-mb must be an integer from 64 to 4096');
  const url = pyodide.startsWith('file:') ? pyodide : `file://${pyodide.startsWith('/') ? '' : '/'}${pyodide.replaceAll('\\', '/')}`;
  return { pyodideUrl: url.endsWith('/') ? url : `${url}/`, memoryBytes: memoryMb * 1024 * 1024, spare, snapshot };
}

/** The snapshot's bytes; none (each interpreter then starts from scratch) when it cannot be read. */
function readSnapshot(file: string): Uint8Array | undefined {
  try {
    return Deno.readFileSync(file);
  } catch (error) {
    console.error(`sandbox kernel: the interpreter snapshot ${file} cannot be read, so interpreters start from scratch: ${String(error)}`);
    return undefined;
  }
}

// ---- frames out: one writer, whole frames, in order ----

let writing: Promise<void> = Promise.resolve();

/** `outbox`: the interpreter whose output this is, and how much of its outbox the frame frees once written. */
function sendFrame(message: object, outbox?: { control: Int32Array; chars: number }): void {
  const body = encoder.encode(JSON.stringify(message));
  const frame = new Uint8Array(4 + body.length);
  new DataView(frame.buffer).setUint32(0, body.length);
  frame.set(body, 4);
  writing = writing.then(async () => {
    try {
      for (let view = frame; view.length > 0;) view = view.subarray(await Deno.stdout.write(view));
    } catch {
      Deno.exit(0); // the host is gone
    }
    if (outbox) {
      Atomics.sub(outbox.control, CONTROL.outboxBytes, outbox.chars);
      Atomics.notify(outbox.control, CONTROL.outboxBytes);
    }
  });
}

// ---- the worker: one Python interpreter ----

interface Run {
  run: string;
  token: string | null;
  /** `ignored` was sent for it. */
  ignoredSaid?: boolean;
}

interface Kernel {
  worker: Worker;
  port: MessagePort;
  control: Int32Array;
  interrupt: Int32Array;
  reply: SharedArrayBuffer;
  /** Execs passed to the worker and not done yet, oldest first (the first runs). */
  runs: Run[];
  lastRun: string;
  announce: boolean;
  /** Its Python version, once it is ready. */
  python: string | undefined;
}

/** The interpreter that runs the execs. */
let kernel: Kernel | undefined;
/** With --spare: the next one, started ahead so that a restart costs no load. */
let spare: Kernel | undefined;

/** Starts an interpreter in a new worker; `announce`: say `ready` once it is. */
function createKernel(options: Options, announce: boolean): Kernel {
  const control = new SharedArrayBuffer(CONTROL_SLOTS * 4);
  const interrupt = new SharedArrayBuffer(4); // one byte for Pyodide, a word to wait on
  const reply = new SharedArrayBuffer(64 * 1024, { maxByteLength: MAX_SYNC_REPLY_BYTES });
  const worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module', deno: { permissions: workerPermissions(options) } });
  const channel = new MessageChannel();
  const init: WorkerInit = {
    port: channel.port2,
    pyodideUrl: options.pyodideUrl,
    source: options.source,
    control,
    interrupt,
    reply,
    memoryBytes: options.memoryBytes,
    // A copy for each worker: the restored interpreter's memory is made from it.
    ...(options.snapshot ? { snapshot: options.snapshot } : {}),
  };
  worker.postMessage(init, [channel.port2]);
  // Only the private port counts: the worker's global channel is reachable by its code.
  worker.onmessage = () => {};
  const created: Kernel = {
    announce,
    python: undefined,
    worker,
    port: channel.port1,
    control: new Int32Array(control),
    interrupt: new Int32Array(interrupt),
    reply,
    runs: [],
    lastRun: 'none',
  };
  worker.onerror = (event) => {
    event.preventDefault();
    onWorkerDied(created, event.message, options);
  };
  channel.port1.onmessage = (event: MessageEvent<unknown>) => {
    const message = wellFormed(event.data);
    if (!message) return;
    try {
      if (kernel === created) fromWorker(created, message, options);
      else if (spare === created) fromSpare(created, message);
    } catch (error) {
      console.error(`sandbox kernel: a message from the interpreter failed: ${String(error)}`);
    }
  };
  return created;
}

/** A worker that died (its heap exhausted, say) cannot finish its runs: they say so, and a fresh interpreter takes over. */
function onWorkerDied(dead: Kernel, why: string, options: Options): void {
  if (spare === dead) {
    spare = undefined;
    console.error(`sandbox kernel: the spare interpreter ended: ${why}`);
    return;
  }
  if (kernel !== dead) return;
  console.error(`sandbox kernel: the interpreter ended: ${why}`);
  for (const run of dead.runs) {
    sendFrame(
      doneFrame(run, 'error', null, {
        type: 'KernelDied',
        message: `the interpreter ended: ${why}; the session's state is lost`,
        traceback: '',
      }),
    );
  }
  dead.runs = [];
  replaceKernel(options, false);
}

/** Ends the current interpreter and puts the spare (or a new one) in its place. */
function replaceKernel(options: Options, announce: boolean): void {
  kernel?.worker.terminate();
  syncWaits.clear();
  const next = spare ?? createKernel(options, announce);
  spare = undefined;
  next.announce = announce;
  kernel = next;
  if (next.python !== undefined) onReady(next, options);
}

function fromSpare(waiting: Kernel, message: FromWorker): void {
  if (message.k === 'ready') waiting.python = message.python;
  else if (message.k === 'failed') {
    spare = undefined;
    console.error(`sandbox kernel: the spare interpreter did not start: ${message.message}`);
  }
}

/** The current interpreter is ready: say so (if asked), and start the spare (if wanted). */
function onReady(current: Kernel, options: Options): void {
  if (current.announce) {
    sendFrame({
      t: 'ready',
      python: current.python,
      pid: Deno.pid,
      isolation: 'wasm',
      seccomp: 'not used: WebAssembly sandbox',
      init: 'not used: WebAssembly sandbox',
    });
  }
  // After the current one is ready, so that it never waits for the spare's start.
  if (options.spare && !spare) spare = createKernel(options, false);
}

/**
 * The worker's own permissions (--unstable-worker-options): reading Pyodide and this folder,
 * nothing else. Its own, so that the worker can drop even these once Python is loaded while
 * this thread keeps them to start the next interpreter.
 */
function workerPermissions(options: Options): Deno.PermissionOptionsObject {
  return {
    read: [pathOf(options.pyodideUrl), pathOf(new URL('.', import.meta.url))],
    write: false,
    net: false,
    env: false,
    run: false,
    ffi: false,
    sys: false,
    import: false,
  };
}

function doneFrame(run: Run, status: string, value: string | null, error: object | null): object {
  return { t: 'done', run: run.run, token: run.token, status, value, error };
}

function runOf(current: Kernel): string {
  return current.runs[0]?.run ?? current.lastRun;
}

function fromWorker(current: Kernel, message: FromWorker, options: Options): void {
  switch (message.k) {
    case 'ready':
      current.python = message.python;
      onReady(current, options);
      return;
    case 'failed':
      console.error(`sandbox kernel: Python did not start: ${message.message}`);
      Deno.exit(3);
      return;
    case 'out':
      sendFrame(
        { t: 'out', run: runOf(current), stream: message.stream, data: message.data },
        { control: current.control, chars: message.data.length },
      );
      return;
    case 'image':
      if (!IMAGE_MIMES.has(message.mime) || !isText(message.data, MAX_IMAGE_CHARS) || !BASE64.test(message.data)) {
        return dropped(current, 'an image that is not base64 of a known type');
      }
      sendFrame(
        { t: 'image', run: runOf(current), mime: message.mime, data: message.data },
        { control: current.control, chars: message.data.length },
      );
      return;
    case 'file': {
      const file = fileFields(message.frame);
      if (!file) return dropped(current, 'a file entry that is not one');
      sendFrame({ t: 'file', run: runOf(current), ...file }, { control: current.control, chars: message.frame.length });
      return;
    }
    case 'req':
      onRequest(current, message);
      return;
    case 'ignored': {
      // Said once, of a run the host interrupted: the host then need not wait out its grace.
      const run = current.runs[0];
      if (!run || run.ignoredSaid || Atomics.load(current.control, CONTROL.interrupted) !== 1) return;
      run.ignoredSaid = true;
      sendFrame({ t: 'ignored', run: run.run });
      return;
    }
    case 'done': {
      const run = current.runs.shift();
      if (!run) return;
      current.lastRun = run.run;
      let outcome: { status: string; value: string | null; error: object | null };
      try {
        outcome = JSON.parse(message.outcome) as typeof outcome;
      } catch {
        outcome = {
          status: 'error',
          value: null,
          error: { type: 'KernelError', message: 'the run ended without a readable outcome', traceback: '' },
        };
      }
      sendFrame(doneFrame(run, outcome.status, outcome.value, outcome.error));
      return;
    }
  }
}

// What the worker posts is checked here: the code can call the worker's functions for Python
// (kernel.py's bridge) with arguments of its own. Nothing it posts can make a frame the host
// would refuse, nor set a frame's type or run.
const IMAGE_MIMES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/svg+xml']);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** 8 MiB as base64; a file's content, 4 MiB as base64. */
const MAX_IMAGE_CHARS = 11_200_000;
const MAX_FILE_CHARS = 5_600_000;
const FILE_SKIPS = new Set(['count', 'size', 'total', 'listing']);

const isText = (value: unknown, max: number): value is string => typeof value === 'string' && value.length <= max;

/** The fields of a `file` frame from kernel.py's JSON, or undefined if they are not what it sends. */
function fileFields(json: unknown): { path: string; bytes: number; data?: string; skipped?: string } | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(String(json));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { path, bytes, data, skipped } = parsed as Record<string, unknown>;
  if (!isText(path, 500) || path.length === 0 || !Number.isSafeInteger(bytes) || (bytes as number) < 0) return undefined;
  if (data !== undefined && !(isText(data, MAX_FILE_CHARS) && BASE64.test(data))) return undefined;
  if (skipped !== undefined && !(typeof skipped === 'string' && FILE_SKIPS.has(skipped))) return undefined;
  return { path, bytes: bytes as number, ...(data !== undefined ? { data } : {}), ...(skipped !== undefined ? { skipped } : {}) };
}

function dropped(current: Kernel, what: string): void {
  const data = `[sandbox] ${what} was dropped\n`;
  sendFrame({ t: 'out', run: runOf(current), stream: 'stderr', data });
}

/** A message from the worker in the shape channel.ts gives it, else undefined. */
function wellFormed(message: unknown): FromWorker | undefined {
  if (typeof message !== 'object' || message === null) return undefined;
  const m = message as Record<string, unknown>;
  switch (m.k) {
    case 'out':
      return (m.stream === 'stdout' || m.stream === 'stderr') && isText(m.data, 64 * 1024) ? (m as FromWorker) : undefined;
    case 'req':
      return Number.isSafeInteger(m.id) && (m.id as number) >= 0 && isText(m.method, 64) && m.method !== '' && typeof m.params === 'string'
        ? { k: 'req', id: m.id as number, method: m.method, params: m.params, sync: m.sync === true }
        : undefined;
    case 'image':
      return typeof m.mime === 'string' && typeof m.data === 'string' ? (m as FromWorker) : undefined;
    case 'file':
      return typeof m.frame === 'string' ? (m as FromWorker) : undefined;
    case 'ready':
    case 'failed':
    case 'done':
    case 'ignored':
      return m as FromWorker;
    default:
      return undefined;
  }
}

function onRequest(current: Kernel, message: Extract<FromWorker, { k: 'req' }>): void {
  let params: unknown;
  try {
    params = JSON.parse(message.params);
  } catch {
    return replyToWorker(current, message.id, message.sync, {
      ok: false,
      error: { type: 'HostError', kind: 'failed', message: 'the request parameters are not JSON' },
    });
  }
  if (message.sync) syncWaits.add(message.id);
  sendFrame({ t: 'req', id: message.id, run: runOf(current), method: message.method, params });
}

/** Ids of synchronous requests whose replies go to the shared buffer. */
const syncWaits = new Set<number>();

function replyToWorker(current: Kernel, id: number, sync: boolean, reply: object): void {
  const text = JSON.stringify(reply);
  if (!sync) return post(current, { k: 'res', id, text });
  // The worker gave up on this one (interrupted): a late reply is dropped.
  if (Atomics.load(current.control, CONTROL.syncId) !== id) return;
  let bytes = encoder.encode(text);
  if (bytes.length > MAX_SYNC_REPLY_BYTES) {
    bytes = encoder.encode(
      JSON.stringify({
        ok: false,
        error: {
          type: 'HostError',
          kind: 'too-large',
          message: `the reply is ${bytes.length} bytes; the limit is ${MAX_SYNC_REPLY_BYTES}`,
        },
      }),
    );
  }
  if (current.reply.byteLength < bytes.length) current.reply.grow(bytes.length);
  new Uint8Array(current.reply, 0, bytes.length).set(bytes);
  Atomics.store(current.control, CONTROL.replyLength, bytes.length);
  Atomics.store(current.control, CONTROL.replyId, id);
  Atomics.store(current.control, CONTROL.replyState, 1);
  Atomics.notify(current.control, CONTROL.replyState);
}

function post(current: Kernel, message: ToWorker): void {
  current.port.postMessage(message);
}

// ---- frames in ----

interface HostMessage {
  t?: unknown;
  run?: unknown;
  code?: unknown;
  token?: unknown;
  id?: unknown;
}

function onHostMessage(message: HostMessage, options: Options): void {
  const current = kernel;
  if (!current) return;
  switch (message.t) {
    case 'exec': {
      const run = { run: String(message.run), token: typeof message.token === 'string' ? message.token : null };
      if (current.runs.length === 0) resetInterrupt(current);
      current.runs.push(run);
      post(current, { k: 'exec', code: String(message.code ?? '') });
      return;
    }
    case 'interrupt':
      if (current.runs[0] && current.runs[0].run === message.run) {
        Atomics.store(current.control, CONTROL.interrupted, 1);
        Atomics.store(current.interrupt, 0, 2); // SIGINT, in the byte Pyodide reads
        Atomics.notify(current.interrupt, 0); // and a sleep wakes
        post(current, { k: 'interrupt' });
      }
      return;
    case 'res': {
      const id = Number(message.id);
      const sync = syncWaits.delete(id);
      const { t: _t, id: _id, ...reply } = message;
      replyToWorker(current, id, sync, reply);
      return;
    }
    case 'restart':
      // A fresh interpreter: the old worker and everything it ran end now.
      replaceKernel(options, true);
      return;
  }
}

function resetInterrupt(current: Kernel): void {
  Atomics.store(current.control, CONTROL.interrupted, 0);
  Atomics.store(current.interrupt, 0, 0);
}

/**
 * Reads the bootstrap (the kernel's Python source) and starts the first interpreter with it,
 * then reads frames until stdin ends; then the process ends.
 */
async function readStdin(parsed: Omit<Options, 'source'>): Promise<void> {
  let options: Options | undefined;
  const sourceParts: Uint8Array[] = [];
  const reader = Deno.stdin.readable.getReader();
  let buffered = new Uint8Array(0);
  const take = (n: number) => {
    const out = buffered.subarray(0, n);
    buffered = buffered.subarray(n);
    return out;
  };
  let skip = -1; // bootstrap bytes still to read; -1 while its length line is incomplete
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    const joined = new Uint8Array(buffered.length + value.length);
    joined.set(buffered);
    joined.set(value, buffered.length);
    buffered = joined;
    if (skip < 0) {
      const newline = buffered.indexOf(10);
      if (newline < 0) continue;
      skip = Number(decoder.decode(take(newline + 1)).trim());
      if (!Number.isSafeInteger(skip) || skip <= 0 || skip > MAX_SOURCE_BYTES) {
        throw new Error("stdin must start with the bootstrap: <length>\\n<the kernel's Python source, that many bytes>");
      }
    }
    if (skip > 0) {
      const part = take(Math.min(skip, buffered.length));
      sourceParts.push(part.slice());
      skip -= part.length;
    }
    if (skip > 0) continue;
    if (!options) {
      options = { ...parsed, source: decoder.decode(concat(sourceParts)) };
      kernel = createKernel(options, true);
      watchMemory(options);
    }
    while (buffered.length >= 4) {
      const size = new DataView(buffered.buffer, buffered.byteOffset, 4).getUint32(0);
      if (size > MAX_HOST_FRAME_BYTES) throw new Error(`a host frame of ${size} bytes is over the limit`);
      if (buffered.length < 4 + size) break;
      take(4);
      onHostMessage(JSON.parse(decoder.decode(take(size))) as HostMessage, options);
    }
    buffered = buffered.slice(); // let go of the chunks already read
  }
}

/**
 * Ends the interpreter when the process's resident memory passes the WebAssembly cap plus the
 * headroom (a bomb of JavaScript objects, which the WebAssembly cap does not see); the next
 * interpreter starts fresh.
 */
function watchMemory(options: Options): void {
  const limit = options.memoryBytes + PROCESS_HEADROOM_MB * 1024 * 1024;
  let armed = true;
  setInterval(() => {
    const over = Deno.memoryUsage().rss > limit;
    // The ended worker's memory goes back over the next moments: no second verdict until it has.
    if (!over) armed = true;
    if (!kernel || !over || !armed) return;
    armed = false;
    onWorkerDied(kernel, `the sandbox went over its memory limit (${Math.round(limit / 1024 / 1024)} MB)`, options);
  }, MEMORY_WATCH_MS);
}

function concat(parts: Uint8Array[]): Uint8Array {
  const joined = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    joined.set(part, at);
    at += part.length;
  }
  return joined;
}

const parsed = parseOptions(Deno.args);
try {
  await readStdin(parsed);
} catch (error) {
  console.error(`sandbox kernel: ${error instanceof Error ? error.message : String(error)}`);
}
// Stdin closed: the host is gone or done. Stop at once, even mid-run.
Deno.exit(0);

// The WebAssembly kernel's worker: loads Pyodide and the Python kernel (the source host.ts passes on),
// then takes away everything of the host that Python's `js` module could reach, and runs each
// `exec` the main thread (host.ts) passes on. Runs as a Deno worker so that the main thread
// keeps reading stdin while Python runs: interrupts arrive through Pyodide's interrupt buffer,
// and a synchronous request waits on a shared buffer the main thread fills with the reply.
// Everything crosses to the main thread through a private MessagePort, never the worker's
// global channel, so code that reaches this worker's global scope cannot speak for the kernel.
/// <reference lib="deno.worker" />
import type { FromWorker, ToWorker, WorkerInit } from './channel.ts';
import { createRequire } from 'node:module';
import { CONTROL, OUT_CHUNK_CHARS, OUTBOX_LIMIT_BYTES } from './channel.ts';
import { loadPython, type Pyodide } from './load-python.ts';

interface PyCallable {
  (...args: unknown[]): unknown;
  destroy?: () => void;
}
interface PyDict {
  get(name: string): PyCallable;
}

const init = await new Promise<WorkerInit>((resolve) => {
  self.onmessage = (event: MessageEvent<WorkerInit>) => resolve(event.data);
});
self.onmessage = null;
const port = init.port;
const control = new Int32Array(init.control);
const interruptBuffer = new Uint8Array(init.interrupt, 0, 1);
/** The same bytes as a word to wait on: the main thread wakes a sleep when it interrupts. */
const interruptWord = new Int32Array(init.interrupt, 0, 1);
const replyData = init.reply;
const post = (message: FromWorker) => port.postMessage(message);
const decoder = new TextDecoder();

capMemory(init.memoryBytes);
noProcesses();
// A promise the runtime drops (a socket that cannot open, say) must not end the interpreter.
globalThis.addEventListener('unhandledrejection', (event) => event.preventDefault());

try {
  const pyodide = await startPython();
  // Nothing from here on needs the host: read access goes before any Python runs.
  Deno.permissions.revokeSync({ name: 'read' });
  stripGlobals();
  const namespace = (pyodide.globals.get('dict') as PyCallable)() as PyDict;
  pyodide.runPython(init.source, { globals: namespace, filename: '<kernel>' });
  pyodide.setInterruptBuffer(takenOnce(interruptWord));
  // What reaches the C-level streams (os.write(1, ...)), as it comes: the kernel replaces sys.stdout and sys.stderr.
  pyodide.setStdout(rawStream('stdout'));
  pyodide.setStderr(rawStream('stderr'));
  const python = namespace.get('start')(bridge()) as string;
  serve(namespace);
  post({ k: 'ready', python });
} catch (error) {
  post({ k: 'failed', message: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
}

/** From the snapshot when there is one; from scratch when there is none or it does not load. */
async function startPython(): Promise<Pyodide> {
  if (init.snapshot) {
    try {
      return await loadPython(init.pyodideUrl, { snapshot: init.snapshot });
    } catch (error) {
      console.error(`sandbox kernel: the interpreter snapshot did not load, so it starts from scratch: ${String(error)}`);
    }
  }
  return await loadPython(init.pyodideUrl);
}

/**
 * Refuses to grow WebAssembly memory past the cap: Emscripten's allocator then fails, and
 * Python raises MemoryError in the code that asked, with the interpreter intact.
 */
function capMemory(maxBytes: number): void {
  const grow = WebAssembly.Memory.prototype.grow;
  const PAGE = 65536;
  WebAssembly.Memory.prototype.grow = function (this: WebAssembly.Memory, pages: number): number {
    if (this.buffer.byteLength + pages * PAGE > maxBytes) throw new RangeError('the sandbox memory limit is reached');
    return grow.call(this, pages);
  };
}

/**
 * Under Deno, Pyodide's Emscripten runtime takes itself for Node and runs os.system() with
 * node:child_process. The process may not run anything anyway; this makes the refusal an exit
 * status instead of an exception inside WebAssembly, which Pyodide treats as fatal.
 */
function noProcesses(): void {
  const childProcess = createRequire(import.meta.url)('node:child_process') as Record<string, unknown>;
  const refuse = () => ({
    pid: 0,
    status: 127,
    signal: null,
    output: [null, '', ''],
    stdout: '',
    stderr: '',
    error: new Error('no processes in the WebAssembly sandbox'),
  });
  for (const name of ['spawnSync', 'execSync', 'execFileSync']) childProcess[name] = refuse;
  for (const name of ['spawn', 'exec', 'execFile', 'fork']) {
    childProcess[name] = () => {
      throw new Error('no processes in the WebAssembly sandbox');
    };
  }
}

/** Host powers and ways out, removed from this worker's global scope (and its prototype chain). */
function stripGlobals(): void {
  const names = [
    'Deno',
    'fetch',
    'Request',
    'Response',
    'Headers',
    'WebSocket',
    'WebSocketStream',
    'EventSource',
    'XMLHttpRequest',
    'Worker',
    'SharedWorker',
    'BroadcastChannel',
    'MessageChannel',
    'navigator',
    'caches',
    'indexedDB',
    'localStorage',
    'sessionStorage',
    'postMessage',
    'close',
    'onmessage',
    'onmessageerror',
    'importScripts',
    'open',
    'FileReader',
    '__bootstrap',
    'location',
  ];
  // Any function's `constructor` is Function, which compiles JavaScript from a string: gone, for
  // plain, async and generator functions alike.
  for (const sample of [function () {}, async function () {}, function* () {}, async function* () {}]) {
    Object.defineProperty(Object.getPrototypeOf(sample), 'constructor', { value: undefined, writable: false, configurable: false });
  }
  for (let scope: object | null = globalThis; scope && scope !== Object.prototype; scope = Object.getPrototypeOf(scope)) {
    for (const name of names) {
      try {
        Reflect.deleteProperty(scope, name);
      } catch {
        // Not configurable: overwritten below where possible.
      }
      if (name in scope) {
        try {
          Object.defineProperty(scope, name, { value: undefined, configurable: false, writable: false });
        } catch {
          // Nothing more to do: the process has no permission to use it anyway.
        }
      }
    }
  }
}

/** The functions kernel.py calls to reach the host. */
function bridge(): object {
  return {
    out: sendOut,
    image: (mime: string, data: string): void => {
      waitForOutbox();
      Atomics.add(control, CONTROL.outboxBytes, data.length);
      post({ k: 'image', mime, data });
    },
    file: (frame: string): void => {
      waitForOutbox();
      Atomics.add(control, CONTROL.outboxBytes, frame.length);
      post({ k: 'file', frame });
    },
    request_sync: requestSync,
    request_async: (id: number, method: string, params: string): Promise<string> =>
      new Promise<string>((resolve) => {
        pendingReplies.set(id, resolve);
        post({ k: 'req', id, method, params, sync: false });
      }),
    interrupted: (): boolean => Atomics.load(control, CONTROL.interrupted) === 1,
    ignored: (): void => post({ k: 'ignored' }),
    sleep: (seconds: number): void => {
      if (!interruptWaiting()) Atomics.wait(interruptWord, 0, 0, seconds * 1000);
    },
  };
}

/** A C-level stream's writer: bytes decoded as UTF-8 as they come (a character may be split between writes). */
function rawStream(stream: 'stdout' | 'stderr'): { write(buffer: Uint8Array): number; isatty: boolean } {
  const decoder = new TextDecoder('utf-8', { fatal: false });
  return {
    isatty: false,
    write: (buffer: Uint8Array) => {
      const text = decoder.decode(buffer, { stream: true });
      if (text) sendOut(stream, text);
      return buffer.length;
    },
  };
}

/** Output to the host, after waiting for room; false if an interrupt cut the wait (the text is dropped). */
function sendOut(stream: 'stdout' | 'stderr', data: string): boolean {
  // In pieces: what reaches the C-level streams (os.write(1, ...)) comes as one line, however long.
  for (let start = 0; start < data.length; start += OUT_CHUNK_CHARS) {
    if (!waitForOutbox()) return false;
    const piece = data.slice(start, start + OUT_CHUNK_CHARS);
    Atomics.add(control, CONTROL.outboxBytes, piece.length);
    post({ k: 'out', stream, data: piece });
  }
  return true;
}

const pendingReplies = new Map<number, (text: string) => void>();

/**
 * The interrupt as CPython's periodic check should read it: taken and cleared in one step. Its
 * check reads the byte, then writes 0; an interrupt the main thread stored between the two was
 * lost, and the code ran on (under load, about once in a few hundred interrupts). Here the read
 * takes the interrupt atomically, and the 0 written after it changes nothing.
 */
function takenOnce(word: Int32Array): { 0: number } {
  const slot = {} as { 0: number };
  Object.defineProperty(slot, 0, {
    get: () => Atomics.exchange(word, 0, 0),
    set: (value: number) => {
      if (value !== 0) Atomics.store(word, 0, value);
    },
  });
  return slot;
}

/** Whether an interrupt waits: Pyodide raises it at the next check; a wait here gives up. */
function interruptWaiting(): boolean {
  return interruptBuffer[0] !== 0;
}

/** Back-pressure: blocks while the main thread has more than the limit of output to write. */
function waitForOutbox(): boolean {
  while (Atomics.load(control, CONTROL.outboxBytes) > OUTBOX_LIMIT_BYTES) {
    if (interruptWaiting()) return false;
    Atomics.wait(control, CONTROL.outboxBytes, Atomics.load(control, CONTROL.outboxBytes), 50);
  }
  return true;
}

/** Posts the request, then blocks until the main thread puts its reply in the shared buffer; undefined (None) if interrupted. */
function requestSync(id: number, method: string, params: string): string | undefined {
  Atomics.store(control, CONTROL.syncId, id);
  Atomics.store(control, CONTROL.replyState, 0);
  post({ k: 'req', id, method, params, sync: true });
  for (;;) {
    if (Atomics.load(control, CONTROL.replyState) === 1 && Atomics.load(control, CONTROL.replyId) === id) break;
    if (interruptWaiting()) {
      Atomics.store(control, CONTROL.syncId, 0);
      interruptBuffer[0] = 0; // raised here, as KeyboardInterrupt, once
      return undefined;
    }
    Atomics.wait(control, CONTROL.replyState, 0, 50);
  }
  const length = Atomics.load(control, CONTROL.replyLength);
  const text = decoder.decode(new Uint8Array(replyData, 0, length).slice());
  Atomics.store(control, CONTROL.syncId, 0);
  Atomics.store(control, CONTROL.replyState, 0);
  return text;
}

/** One exec, to its `done`: never rejects, so that the queue of execs never stops. */
async function runExec(execute: PyCallable, code: string): Promise<void> {
  let outcome: string;
  try {
    const task = execute(code) as PromiseLike<string> & { destroy?: () => void };
    try {
      outcome = await task;
    } finally {
      task.destroy?.();
    }
  } catch (error) {
    // The kernel's own report failed (Pyodide's error, not the code's): the run still ends.
    outcome = JSON.stringify({
      status: 'error',
      value: null,
      error: { type: 'KernelError', message: String(error).slice(0, 2000), traceback: '' },
    });
  }
  interruptBuffer[0] = 0;
  post({ k: 'done', outcome });
}

/** Takes the main thread's messages: runs one exec at a time, in order. */
function serve(namespace: PyDict): void {
  const execute = namespace.get('execute');
  const interrupt = namespace.get('interrupt');
  let queue = Promise.resolve();
  port.onmessage = (event: MessageEvent<ToWorker>) => {
    const message = event.data;
    if (message.k === 'exec') {
      queue = queue.then(() => runExec(execute, message.code));
    } else if (message.k === 'interrupt') {
      // Here Python is idle (it awaits, or its run is over): the buffer would interrupt the
      // call below instead, so it is cleared, and a run that awaits is cancelled.
      interruptBuffer[0] = 0;
      try {
        interrupt();
      } catch (error) {
        post({ k: 'out', stream: 'stderr', data: `[sandbox] the interrupt failed: ${String(error)}\n` });
      }
    } else if (message.k === 'res') {
      const resolve = pendingReplies.get(message.id);
      pendingReplies.delete(message.id);
      resolve?.(message.text);
    }
  };
}

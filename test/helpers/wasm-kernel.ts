// A WebAssembly kernel process (src/sandbox/wasm/deno-kernel/host.ts) driven as the host drives
// a container's kernel: its bootstrap (its Python source) on stdin, then frames through the real codec,
// every frame from the kernel checked with the real schemas. For its tests and its bench.
import assert from 'node:assert/strict';
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import { KERNEL_FRAME_LIMITS, MAX_KERNEL_FRAME_BYTES } from '../../src/sandbox/protocol/kernel-process.ts';
import { encodeFrame, FrameDecoder } from '../../src/sandbox/protocol/codec.ts';
import { kernelMessageSchema, type HostMessage, type KernelMessage } from '../../src/sandbox/protocol/messages.ts';
import { wasmKernelCommand } from '../../src/sandbox/wasm/command.ts';
import { wasmKernelSource } from '../../src/sandbox/wasm/source.ts';

export const START_MS = 180_000;
const RUN_MS = 120_000;

export type Done = Extract<KernelMessage, { t: 'done' }>;
export type Request = Extract<KernelMessage, { t: 'req' }>;
export type Reply = { ok: true; result: unknown } | { ok: false; error: { type: string; kind: 'failed'; message: string } };

export interface RunOptions {
  /** The reply to a request (default: its params echoed), or a promise of it. */
  reply?: (request: Request) => Reply | Promise<Reply> | undefined;
  /** Called with each piece of output as it comes. */
  onOutput?: (text: string, run: string) => void;
}

export interface RunResult {
  stdout: string;
  stderr: string;
  done: Done;
  requests: Request[];
  /** Every frame of the run, in order. */
  frames: KernelMessage[];
}

/** One kernel process and what it has said. */
export class WasmKernel {
  readonly child: ChildProcessByStdio<Writable, Readable, Readable>;
  readonly frames: KernelMessage[] = [];
  readonly rawReady: Record<string, unknown>[] = [];
  readonly invalid: string[] = [];
  stderr = '';
  exitCode: number | null | undefined;
  private readonly decoder = new FrameDecoder({ max: MAX_KERNEL_FRAME_BYTES, byType: KERNEL_FRAME_LIMITS });
  private listeners = new Set<(message: KernelMessage) => void>();
  private runs = 0;

  constructor(env: NodeJS.ProcessEnv = {}, options: Parameters<typeof wasmKernelCommand>[0] = {}) {
    const command = wasmKernelCommand(options);
    this.child = spawn(command.command, command.args, { env: { ...process.env, ...command.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stdin.on('error', () => {});
    this.child.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString('utf8')));
    this.child.stdout.on('data', (chunk: Buffer) => this.onData(chunk));
    this.child.on('exit', (code) => (this.exitCode = code));
    // The bootstrap, as kernel-process.ts writes it: the kernel's Python source.
    const source = wasmKernelSource();
    this.child.stdin.write(`${source.length}\n`);
    this.child.stdin.write(source);
  }

  send(message: HostMessage): void {
    this.child.stdin.write(encodeFrame(message));
  }

  /** Resolves with the first frame from now on that `match` accepts. */
  next(match: (message: KernelMessage) => boolean, ms = RUN_MS): Promise<KernelMessage> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.listeners.delete(listener);
        reject(new Error(`no such frame within ${ms} ms; stderr: ${this.stderr.slice(-2000)}`));
      }, ms);
      const listener = (message: KernelMessage) => {
        if (!match(message)) return;
        clearTimeout(timer);
        this.listeners.delete(listener);
        resolve(message);
      };
      this.listeners.add(listener);
    });
  }

  async ready(ms = START_MS): Promise<Extract<KernelMessage, { t: 'ready' }>> {
    const ready = this.frames.find((m) => m.t === 'ready') ?? (await this.next((m) => m.t === 'ready', ms));
    assert.equal(ready.t, 'ready');
    return ready;
  }

  /** Runs `code` as the host runs a run: exec, output, requests answered, until its `done`. */
  async run(code: string, options: RunOptions = {}): Promise<RunResult> {
    const run = `run-${++this.runs}`;
    const token = randomBytes(8).toString('hex');
    const result: Omit<RunResult, 'done'> = { stdout: '', stderr: '', requests: [], frames: [] };
    const collect = (message: KernelMessage) => {
      if ('run' in message && message.run === run) result.frames.push(message);
      if (message.t === 'out' && message.run === run) {
        if (message.stream === 'stdout') result.stdout += message.data;
        else result.stderr += message.data;
        options.onOutput?.(message.data, run);
      }
      if (message.t === 'req' && message.run === run) {
        result.requests.push(message);
        void Promise.resolve((options.reply ?? echo)(message)).then((reply) => {
          if (reply) this.send({ t: 'res', id: message.id, ...reply });
        });
      }
    };
    this.listeners.add(collect);
    try {
      const ended = this.next((m) => m.t === 'done' && m.run === run && m.token === token);
      this.send({ t: 'exec', run, code, token });
      const done = (await ended) as Done;
      return { ...result, done };
    } finally {
      this.listeners.delete(collect);
    }
  }

  get lastRun(): string {
    return `run-${this.runs}`;
  }

  async close(): Promise<void> {
    if (this.exitCode !== undefined) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }

  private onData(chunk: Buffer): void {
    for (const body of this.decoder.push(chunk)) {
      const parsed = kernelMessageSchema.safeParse(JSON.parse(body));
      // `ignored` (the code went on after its interrupt) is checked by its shape where the schema does not know it.
      if (!parsed.success && /^\{"t":"ignored","run":"[^"\\]{1,64}"\}$/.test(body)) {
        const ignored = JSON.parse(body) as KernelMessage;
        this.frames.push(ignored);
        for (const listener of [...this.listeners]) listener(ignored);
        continue;
      }
      if (!parsed.success) {
        this.invalid.push(body.slice(0, 300));
        continue;
      }
      if (parsed.data.t === 'ready') this.rawReady.push(JSON.parse(body) as Record<string, unknown>);
      this.frames.push(parsed.data);
      for (const listener of [...this.listeners]) listener(parsed.data);
    }
  }
}

export const echo = (request: Request): Reply => ({ ok: true, result: { echo: request.params } });

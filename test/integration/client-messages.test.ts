// What a client writes to the real bridge's stdin, as raw bytes: a line over the message cap
// (one of 100 MB sent in chunks, with the bridge's memory watched), malformed JSON, a batch and
// a value that is not JSON-RPC are each answered, and the bridge and its sessions stay: after
// each, run_python still works in the same session with its variables. A client that negotiated
// MCP 2025-03-26 has its batches taken message by message.
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { MAX_CLIENT_MESSAGE_BYTES } from '../../src/bridge/stdio-transport.ts';
import { tempDir } from '../helpers/bridge.ts';
import { TEST_IMAGE, testRuntimes } from '../helpers/env.ts';

const MiB = 1024 * 1024;

interface Answer {
  id: string | number | null;
  result?: { structuredContent?: { status?: string }; content?: Array<{ type: string; text?: string }> };
  error?: { code: number; message: string };
}

/** The bridge process with a client that writes raw lines and reads its answers by id. */
class RawBridge {
  readonly child: ChildProcessWithoutNullStreams;
  stderr = '';
  private readonly waiting = new Map<string | number, (answer: Answer) => void>();
  private readonly unanswered: Answer[] = [];
  private readonly nullWaiters: Array<(answer: Answer) => void> = [];
  private readonly batchWaiters: Array<(answers: Answer[]) => void> = [];
  private nextId = 1;

  constructor(configFile: string) {
    this.child = spawn(process.execPath, [resolve('dist/cli.js'), '--config', configFile], { stdio: 'pipe' });
    this.child.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      const value = JSON.parse(line) as (Answer & { method?: string }) | Answer[];
      if (Array.isArray(value)) this.batchWaiters.shift()?.(value);
      else this.received(value);
    });
  }

  private received(message: Answer & { method?: string }): void {
    if (message.method !== undefined) return; // the bridge's own notifications
    if (message.id === null) {
      const waiter = this.nullWaiters.shift();
      if (waiter) waiter(message);
      else this.unanswered.push(message);
      return;
    }
    this.waiting.get(message.id)?.(message);
    this.waiting.delete(message.id);
  }

  /** The answer to the request with `id` (sent by the caller). */
  answerTo(id: string | number): Promise<Answer> {
    return new Promise((resolve) => this.waiting.set(id, resolve));
  }

  /** The next answer with a null id. */
  nullAnswer(): Promise<Answer> {
    const ready = this.unanswered.shift();
    return ready ? Promise.resolve(ready) : new Promise((resolve) => this.nullWaiters.push(resolve));
  }

  /** The next batch of answers (asked for before the batch is sent). */
  batchAnswer(): Promise<Answer[]> {
    return new Promise((resolve) => this.batchWaiters.push(resolve));
  }

  async write(data: string | Buffer): Promise<void> {
    if (!this.child.stdin.write(data)) await new Promise((resolve) => this.child.stdin.once('drain', resolve));
  }

  async request(method: string, params: Record<string, unknown>): Promise<Answer> {
    const id = this.nextId++;
    const answer = this.answerTo(id);
    await this.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    return answer;
  }

  run(code: string, session = 's'): Promise<Answer> {
    return this.request('tools/call', { name: 'run_python', arguments: { code, session } });
  }

  /** Resident memory now and at its peak, in bytes. */
  memory(): { rss: number; peak: number } {
    const status = readFileSync(`/proc/${this.child.pid}/status`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1]) * 1024;
    return { rss: kb('VmRSS'), peak: kb('VmHWM') };
  }
}

const textOf = (answer: Answer) => (answer.result?.content ?? []).map((c) => c.text ?? '').join('\n');

/** A run_python request of `bytes` bytes in all, with or without an id before its huge code. */
function hugeRequest(bytes: number, id?: number): { head: string; tail: string; fill: number } {
  const head = `{"jsonrpc":"2.0",${id === undefined ? '' : `"id":${id},`}"method":"tools/call","params":{"name":"run_python","arguments":{"code":"`;
  const tail = `"}}${id === undefined ? ',"id":999' : ''}}\n`;
  return { head, tail, fill: bytes - head.length - tail.length };
}

/** The bridge, initialized at `protocolVersion`, with `kept = 41` in session "s". */
async function startRaw(runtime: string, protocolVersion: string): Promise<RawBridge> {
  const dir = await tempDir('cem-messages-');
  const configFile = join(dir, 'config.json');
  await writeFile(
    configFile,
    JSON.stringify({
      stateDir: join(dir, 'state'),
      sandbox: { backend: 'container', runtime, image: TEST_IMAGE, memory: '256m', timeoutSeconds: 20, prewarm: false },
    }),
  );
  const bridge = new RawBridge(configFile);
  const init = await bridge.request('initialize', {
    protocolVersion,
    capabilities: {},
    clientInfo: { name: 'raw-test', version: '1.0.0' },
  });
  assert.equal((init.result as { protocolVersion?: string } | undefined)?.protocolVersion, protocolVersion, JSON.stringify(init));
  await bridge.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
  const first = await bridge.run('kept = 41');
  assert.equal(first.result?.structuredContent?.status, 'ok', JSON.stringify(first));
  return bridge;
}

/** Ends the bridge as a client does, by closing its stdin, and waits for it to exit. */
async function stopRaw(bridge: RawBridge | undefined): Promise<void> {
  if (!bridge || bridge.child.exitCode !== null) return;
  const exited = new Promise((resolve) => bridge.child.once('exit', resolve));
  bridge.child.stdin.end();
  await exited;
}

// One runtime is enough: what reads the client's messages does not depend on the sandbox.
for (const runtime of testRuntimes().slice(0, 1)) {
  describe(`client messages the bridge cannot take, on ${runtime}`, () => {
    let bridge: RawBridge;

    before(async () => {
      bridge = await startRaw(runtime, '2025-11-25');
    });
    after(() => stopRaw(bridge));

    /** The session still has its variable, and the bridge still answers. */
    async function sessionKept(): Promise<void> {
      const next = await bridge.run('kept + 1');
      assert.equal(next.result?.structuredContent?.status, 'ok', JSON.stringify(next));
      assert.match(textOf(next), /42/);
    }

    test('an 11 MiB request is answered with an error for its id, and the session stays', async () => {
      const { head, tail, fill } = hugeRequest(11 * MiB, 500);
      const answer = bridge.answerTo(500);
      await bridge.write(head + 'A'.repeat(fill) + tail);
      const error = (await answer).error;
      assert.equal(error?.code, -32600);
      assert.match(error?.message ?? '', new RegExp(`over the ${MAX_CLIENT_MESSAGE_BYTES / MiB} MiB the bridge reads in one message`));
      await sessionKept();
      assert.match(bridge.stderr, /a client message \(id 500\) was answered with an error/);
    });

    test("a 100 MB line sent in chunks is skipped as it arrives: the bridge's memory stays bounded", async () => {
      const { head, tail, fill } = hugeRequest(100 * MiB);
      const before = bridge.memory();
      const answer = bridge.nullAnswer();
      await bridge.write(head);
      const chunk = Buffer.alloc(MiB, 0x41);
      let highest = before.rss;
      for (let sent = 0; sent < fill; sent += chunk.length) {
        await bridge.write(sent + chunk.length <= fill ? chunk : chunk.subarray(0, fill - sent));
        if (sent % (8 * MiB) === 0) highest = Math.max(highest, bridge.memory().rss);
      }
      await bridge.write(tail);
      // Its id comes after the code: it cannot be read from the first bytes, so the answer's is null.
      assert.equal((await answer).error?.code, -32600);
      await sessionKept();
      // Buffered whole, the line alone would take 100 MiB (twice that as text). What it does take is
      // the cap's buffer and the stream's read chunks until they are collected (about 60 MiB here,
      // the same for a line of 400 MiB).
      const grew = bridge.memory().peak - before.peak;
      assert.ok(grew < 80 * MiB, `the bridge's peak memory grew by ${(grew / MiB).toFixed(1)} MiB`);
      assert.ok(highest - before.rss < 80 * MiB, `the bridge's memory rose by ${((highest - before.rss) / MiB).toFixed(1)} MiB`);
    });

    test('malformed JSON gets -32700, and the session stays', async () => {
      const answer = bridge.nullAnswer();
      await bridge.write('{"jsonrpc":"2.0","id":7,"method":\n');
      assert.equal((await answer).error?.code, -32700);
      await sessionKept();
    });

    test('a batch gets -32600 saying batches are not supported, and the session stays', async () => {
      const answer = bridge.nullAnswer();
      await bridge.write('[{"jsonrpc":"2.0","id":600,"method":"ping"},{"jsonrpc":"2.0","id":601,"method":"ping"}]\n');
      const error = (await answer).error;
      assert.equal(error?.code, -32600);
      assert.match(error?.message ?? '', /batches are not supported/);
      await sessionKept();
    });

    test('JSON that is not JSON-RPC gets -32600 with its id, and the session stays', async () => {
      const answer = bridge.answerTo('not-rpc');
      await bridge.write('{"id":"not-rpc","hello":"world"}\n');
      assert.equal((await answer).error?.code, -32600);
      await sessionKept();
    });

    test('oversized lines interleaved with requests, one of them running: every request gets its own answer', async () => {
      const slow = bridge.run('import time\ntime.sleep(1)\nkept * 2');
      const oversized = [701, 702, 703].map((id) => ({ id, answer: bridge.answerTo(id) }));
      const normal: Array<Promise<Answer>> = [];
      for (const { id } of oversized) {
        const { head, tail, fill } = hugeRequest(MAX_CLIENT_MESSAGE_BYTES + MiB, id);
        await bridge.write(head + 'B'.repeat(fill) + tail);
        normal.push(bridge.run(`kept + ${id}`), bridge.request('ping', {}));
      }
      for (const { answer } of oversized) assert.equal((await answer).error?.code, -32600);
      const answers = await Promise.all(normal);
      for (const [i, answer] of answers.entries()) {
        if (i % 2 === 1) assert.deepEqual(answer.result, {}, 'ping');
        else assert.match(textOf(answer), new RegExp(String(41 + oversized[i / 2]!.id)), JSON.stringify(answer));
      }
      const done = await slow;
      assert.match(textOf(done), /82/, JSON.stringify(done));
      await sessionKept();
      assert.equal(bridge.child.exitCode, null, 'the bridge still runs');
    });
  });

  describe(`a client of MCP 2025-03-26, which may send batches, on ${runtime}`, () => {
    let bridge: RawBridge;
    before(async () => {
      bridge = await startRaw(runtime, '2025-03-26');
    });
    after(() => stopRaw(bridge));

    test('its batch is taken message by message and answered as one array', async () => {
      const answers = bridge.batchAnswer();
      await bridge.write(
        `${JSON.stringify([
          { jsonrpc: '2.0', id: 'b1', method: 'tools/call', params: { name: 'run_python', arguments: { code: 'kept + 1', session: 's' } } },
          { jsonrpc: '2.0', method: 'notifications/roots/list_changed' },
          { jsonrpc: '2.0', id: 'b2', method: 'ping' },
          { not: 'json-rpc' },
        ])}\n`,
      );
      const batch = await answers;
      const byId = new Map(batch.map((answer) => [answer.id, answer]));
      assert.equal(batch.length, 3, JSON.stringify(batch));
      assert.match(textOf(byId.get('b1')!), /42/);
      assert.deepEqual(byId.get('b2')?.result, {});
      assert.equal(byId.get(null)?.error?.code, -32600);
    });
  });
}

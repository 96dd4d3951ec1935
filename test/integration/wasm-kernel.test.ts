// The WebAssembly kernel as a process (src/sandbox/wasm/deno-kernel/host.ts, Pyodide in Deno),
// driven as the host drives a container's kernel: its bootstrap (its Python source) on stdin, then frames
// through the real codec, every frame from the kernel checked with the real schemas. Covers
// what the protocol carries (output, errors, state, top-level await, requests, interrupts,
// restart) and an attack battery: each attack is contained and the process keeps answering.
// Kernels start as the product's do, from the interpreter snapshot (snapshot.ts); the start from
// scratch, the fallback, is tested with a file that is not a snapshot.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { preludeCode } from '../../src/bridge/sandbox-api/prelude.ts';
import { kernelDir, pyodideDir, wasmKernelCommand } from '../../src/sandbox/wasm/command.ts';
import { interpreterSnapshot, makeSnapshot, snapshotFile } from '../../src/sandbox/wasm/snapshot.ts';
import { wasmKernelSource } from '../../src/sandbox/wasm/source.ts';
import { Meeting } from '../helpers/meeting.ts';
import { echo, START_MS, WasmKernel, type Done, type RunOptions } from '../helpers/wasm-kernel.ts';
import { quietFor, until } from '../helpers/wait.ts';

const SECRET = `cem-wasm-secret-${randomBytes(6).toString('hex')}`;

/** A run that must end well: its value. */
async function value(kernel: WasmKernel, code: string, options?: RunOptions): Promise<string | null> {
  const { done, stderr } = await kernel.run(code, options);
  assert.equal(done.status, 'ok', `${JSON.stringify(done.error)}\n${stderr}`);
  return done.value;
}

/** A run that must fail: its error. */
async function failure(kernel: WasmKernel, code: string): Promise<NonNullable<Done['error']>> {
  const { done } = await kernel.run(code);
  assert.equal(done.status, 'error', `expected an error, got ${done.value}`);
  assert.ok(done.error);
  return done.error;
}

/** The process still answers, with its state. */
async function stillAnswers(kernel: WasmKernel): Promise<void> {
  assert.equal(await value(kernel, 'kept'), "'state'");
  assert.deepEqual(kernel.invalid, [], 'every frame the kernel sent was valid');
}

describe('the WebAssembly kernel process', () => {
  let kernel: WasmKernel;
  let scratch: string;
  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'cem-wasm-'));
    const snapshot = await interpreterSnapshot();
    assert.ok(snapshot, 'the interpreter snapshot is made (or was there)');
    kernel = new WasmKernel({ CEM_TEST_SECRET: SECRET }, { snapshot });
    await kernel.ready();
    await value(kernel, 'kept = "state"');
  });
  after(async () => {
    await kernel?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  test('its Deno programs pass deno check', () => {
    const command = wasmKernelCommand();
    const checked = spawnSync(
      command.command,
      ['check', '--no-config', '--no-lock', '--unstable-worker-options', 'host.ts', 'worker.ts', 'make-snapshot.ts'],
      {
        cwd: kernelDir(),
        env: { ...process.env, ...command.env, NO_COLOR: '1' },
        encoding: 'utf8',
        timeout: 120_000,
      },
    );
    assert.equal(checked.status, 0, checked.stderr);
  });

  test('says ready with its Python version and its isolation', async () => {
    const ready = await kernel.ready();
    assert.match(ready.python, /^3\.1[3-9]\.\d+$/);
    assert.equal(kernel.rawReady[0]?.isolation, 'wasm');
  });

  test('print comes back as stdout, and the run ends ok', async () => {
    const { stdout, done } = await kernel.run('print("hello", 1)\nprint("to stderr", file=__import__("sys").stderr)');
    assert.equal(stdout, 'hello 1\n');
    assert.equal(done.status, 'ok');
    assert.equal(done.value, null);
    assert.equal(done.error, null);
  });

  test('an error comes back with its type, message and a traceback of the code only', async () => {
    const error = await failure(kernel, 'def f():\n    return 1 / 0\nf()');
    assert.equal(error.type, 'ZeroDivisionError');
    assert.equal(error.message, 'division by zero');
    assert.match(error.traceback, /File "<run-\d+>", line 2, in f/);
    assert.doesNotMatch(error.traceback, /<kernel>|worker\.ts|file:\/\//);
    const syntax = await failure(kernel, 'def (');
    assert.equal(syntax.type, 'SyntaxError');
  });

  test('state is kept between runs, and the last expression is the value', async () => {
    await value(kernel, 'counter = 41');
    assert.equal(await value(kernel, 'counter + 1'), '42');
  });

  test('top-level await', async () => {
    assert.equal(await value(kernel, 'import asyncio\nawait asyncio.sleep(0.05)\n"awaited"'), "'awaited'");
  });

  test('the standard library agent code needs is there', async () => {
    const code = [
      'import json, re, datetime, csv, sqlite3, zlib, hashlib, asyncio, dataclasses, statistics, decimal, zoneinfo',
      'db = sqlite3.connect(":memory:")',
      'db.execute("create table t (x)"); db.executemany("insert into t values (?)", [(1,), (2,)])',
      '(db.execute("select sum(x) from t").fetchone()[0], statistics.mean([1, 2, 3]), len(zlib.compress(b"x" * 100)) < 100)',
    ].join('\n');
    assert.equal(await value(kernel, code), '(3, 2, True)');
  });

  test('requests: synchronous and awaited ones reach the host and bring back its reply', async () => {
    const { done, requests } = await kernel.run(
      'import sandbox_host\n(sandbox_host.request_sync("sync_method", {"a": 1}), await sandbox_host.request("async_method", [2]))',
    );
    assert.equal(done.status, 'ok', JSON.stringify(done.error));
    assert.equal(done.value, "({'echo': {'a': 1}}, {'echo': [2]})");
    assert.deepEqual(
      requests.map((r) => [r.method, r.params]),
      [
        ['sync_method', { a: 1 }],
        ['async_method', [2]],
      ],
    );
    const refused = await kernel.run('import sandbox_host\nsandbox_host.request_sync("nope")', {
      reply: () => ({ ok: false, error: { type: 'HostError', kind: 'failed', message: 'no host method "nope"' } }),
    });
    assert.equal(refused.done.error?.type, 'HostError');
    assert.match(refused.done.error?.message ?? '', /no host method "nope"/);
  });

  test('asyncio.gather of three requests has them out at once', async () => {
    const code = ['import asyncio, sandbox_host', 'await asyncio.gather(*(sandbox_host.request("slow", i) for i in range(3)))'].join('\n');
    // The host answers once all three are out (made one at a time, each would wait 10 s alone).
    const meeting = new Meeting(3);
    const { done } = await kernel.run(code, { reply: async (request) => (await meeting.join(), echo(request)) });
    assert.equal(done.status, 'ok', JSON.stringify(done.error));
    assert.equal(meeting.most, 3, 'requests out at once');
    assert.equal(done.value, "[{'echo': 0}, {'echo': 1}, {'echo': 2}]");
  });

  test('the MCP runtime loads as the prelude, and its calls reach the host', async () => {
    assert.equal(await value(kernel, preludeCode([{ name: 'demo', alias: 'mcp_demo', description: 'A demo server' }])), null);
    const { done, requests } = await kernel.run('await call_tool("demo", "echo", {"text": "hi"})', {
      reply: () => ({ ok: true, result: { value: 'hi back' } }),
    });
    assert.equal(done.status, 'ok', JSON.stringify(done.error));
    assert.equal(done.value, "'hi back'");
    assert.deepEqual(requests[0]?.params, { server: 'demo', tool: 'echo', arguments: { text: 'hi' } });
    const servers = await kernel.run('discovered_servers()', { reply: () => ({ ok: true, result: [{ name: 'demo' }] }) });
    assert.equal(servers.requests[0]?.method, 'list_servers');
    assert.equal(servers.done.status, 'ok', JSON.stringify(servers.done.error));
  });

  test('an interrupt stops an endless loop (KeyboardInterrupt), and the process answers after', async () => {
    const { done } = await kernel.run('print("looping", flush=True)\nwhile True:\n    pass', {
      onOutput: (text, run) => {
        if (text.includes('looping')) kernel.send({ t: 'interrupt', run });
      },
    });
    assert.equal(done.status, 'interrupted');
    assert.equal(done.error?.type, 'KeyboardInterrupt');
    await stillAnswers(kernel);
  });

  test('a hundred interrupts in a row each stop their loop: none is lost to the interpreter check', async () => {
    // CPython's check reads the interrupt, then clears it: one stored between the two was lost.
    for (let i = 0; i < 100; i++) {
      const { done } = await kernel.run(`print("looping ${i}", flush=True)\nwhile True:\n    pass`, {
        onOutput: (text, run) => {
          if (text.includes('looping')) kernel.send({ t: 'interrupt', run });
        },
      });
      assert.equal(done.status, 'interrupted', `interrupt ${i}`);
    }
    await stillAnswers(kernel);
  });

  test('code that catches its interrupt and goes on: the kernel says so (ignored), once', async () => {
    const code = [
      'import time',
      'print("looping", flush=True)',
      'caught = 0',
      'while caught < 2:',
      '    try:',
      '        while True:',
      '            pass',
      '    except KeyboardInterrupt:',
      '        caught += 1',
      'caught',
    ].join('\n');
    const ignored: string[] = [];
    const { done } = await kernel.run(code, {
      onOutput: (text, run) => {
        if (!text.includes('looping')) return;
        kernel.send({ t: 'interrupt', run });
        void kernel
          .next((m) => (m as { t: string }).t === 'ignored')
          .then(() => {
            ignored.push(run);
            kernel.send({ t: 'interrupt', run });
          });
      },
    });
    assert.equal(done.value, '2');
    assert.deepEqual(ignored, [done.run]);
    assert.equal(kernel.frames.filter((f) => (f as { t: string }).t === 'ignored').length, 1);
    await stillAnswers(kernel);
  });

  test('an interrupt cuts time.sleep short', async () => {
    const started = performance.now();
    const { done } = await kernel.run('import time\nprint("sleeping", flush=True)\ntime.sleep(60)', {
      onOutput: (text, run) => {
        if (text.includes('sleeping')) kernel.send({ t: 'interrupt', run });
      },
    });
    assert.equal(done.status, 'interrupted');
    assert.ok(performance.now() - started < 30_000);
    await stillAnswers(kernel);
  });

  test('an interrupt stops code that waits for a reply, awaited or not', async () => {
    for (const call of ['await sandbox_host.request("never")', 'sandbox_host.request_sync("never")']) {
      const { done } = await kernel.run(`import sandbox_host\n${call}`, {
        reply: (request) => {
          kernel.send({ t: 'interrupt', run: request.run });
          return undefined; // never answered
        },
      });
      assert.equal(done.status, 'interrupted', `${call}: ${JSON.stringify(done.error)}`);
      assert.equal(done.error?.type, 'KeyboardInterrupt');
    }
    await stillAnswers(kernel);
  });

  test('files the code writes to /work/out come back', async () => {
    const { done, frames } = await kernel.run('open("/work/out/result.txt", "w").write("made in wasm")');
    assert.equal(done.status, 'ok');
    const file = frames.find((f) => f.t === 'file');
    assert.ok(file && file.t === 'file');
    assert.equal(file.path, 'result.txt');
    assert.equal(Buffer.from(file.data ?? '', 'base64').toString(), 'made in wasm');
  });

  describe('attacks', () => {
    test("host objects: Deno, the worker's global scope and JavaScript's Function are out of reach", async () => {
      const code = [
        'import js, pyodide_js',
        'found = {',
        '  "Deno": getattr(js, "Deno", None),',
        '  "fetch": getattr(js, "fetch", None),',
        '  "process": getattr(js, "process", None),',
        '  "constructor": js.setTimeout.constructor,',
        '  "pyodide constructor": pyodide_js.runPython.constructor,',
        '}',
        '{name: str(thing) for name, thing in found.items() if thing is not None}',
      ].join('\n');
      assert.equal(await value(kernel, code), '{}');
      const string = await failure(kernel, 'import js\njs.setTimeout("globalThis.x = 1", 0)');
      assert.match(string.message, /a timer takes a function/);
      await stillAnswers(kernel);
    });

    test('host files: neither /etc/passwd nor a file the test made outside can be read', async () => {
      const outside = join(scratch, 'outside.txt');
      writeFileSync(outside, SECRET);
      for (const code of [
        'open("/etc/passwd").read()',
        `open(${JSON.stringify(outside)}).read()`,
        `import pyodide_js\npyodide_js.mountNodeFS("/mnt", ${JSON.stringify(scratch)})\nopen("/mnt/outside.txt").read()`,
        // Emscripten's NODEFS, onto the test's folder and onto Pyodide's own (which the process may read; the worker may not).
        ...[scratch, pyodideDir()].map(
          (root) =>
            `import pyodide_js\nfrom pyodide.ffi import to_js\nFS = pyodide_js._module.FS\nFS.mkdirTree("/host")\nFS.mount(FS.filesystems.NODEFS, to_js({"root": ${JSON.stringify(root)}}), "/host")\n__import__("os").listdir("/host")`,
        ),
      ]) {
        const { done } = await kernel.run(code);
        assert.equal(done.status, 'error', `${code} read: ${done.value}`);
        assert.doesNotMatch(JSON.stringify(done), new RegExp(SECRET));
      }
      await stillAnswers(kernel);
    });

    test('host files: a write lands in the sandbox memory only', async () => {
      const target = join(scratch, 'written.txt');
      const code = `import os\nos.makedirs(${JSON.stringify(scratch)}, exist_ok=True)\nopen(${JSON.stringify(target)}, "w").write("x")`;
      assert.equal(await value(kernel, code), '1');
      assert.equal(existsSync(target), false, 'nothing reached the host');
      await stillAnswers(kernel);
    });

    test('the environment: the secret the process was started with is not visible', async () => {
      const { done, stdout } = await kernel.run('import os\nprint(dict(os.environ))\nprint(os.environ.get("CEM_TEST_SECRET"))');
      assert.equal(done.status, 'ok');
      assert.doesNotMatch(stdout, new RegExp(SECRET));
      assert.match(stdout, /None\n$/);
      await stillAnswers(kernel);
    });

    test('processes: os.system and subprocess fail with an error that says what to use instead', async () => {
      const system = await failure(kernel, 'import os\nos.system("touch /tmp/cem-wasm-pwned")');
      assert.equal(system.type, 'OSError');
      assert.match(system.message, /not available in the WebAssembly sandbox[\s\S]*container sandbox/);
      const subprocess = await failure(kernel, 'import subprocess\nsubprocess.run(["id"])');
      assert.equal(subprocess.type, 'OSError');
      assert.match(subprocess.message, /container sandbox/);
      const thread = await kernel.run('import threading\nt = threading.Thread(target=print)\nt.start()');
      assert.notEqual(thread.done.status, 'interrupted');
      await stillAnswers(kernel);
    });

    test('the network: no connection reaches a loopback listener', async () => {
      let connections = 0;
      const server: Server = createServer((socket) => {
        connections++;
        socket.destroy();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as { port: number };
      try {
        const socket = await failure(kernel, `import socket\ns = socket.create_connection(("127.0.0.1", ${port}), timeout=5)`);
        assert.match(socket.message, /no network/);
        await failure(kernel, `import urllib.request\nurllib.request.urlopen("http://127.0.0.1:${port}/", timeout=5).read()`);
        await failure(kernel, `from pyodide.http import pyfetch\nawait pyfetch("http://127.0.0.1:${port}/")`);
        // Nothing later can show a connection that did not happen: the listener gets a moment.
        await quietFor(500);
        assert.equal(connections, 0);
      } finally {
        server.close();
      }
      await stillAnswers(kernel);
    });

    test('memory: a bomb meets the cap as MemoryError, and the interpreter lives on', async () => {
      const one = await failure(kernel, 'big = bytearray(700 * 1024 * 1024)');
      assert.equal(one.type, 'MemoryError');
      const growing = await kernel.run(
        'chunks = []\ntry:\n    while True:\n        chunks.append(bytearray(10 ** 7))\nexcept MemoryError:\n    pass\nlen(chunks) * 10',
      );
      assert.equal(growing.done.status, 'ok', JSON.stringify(growing.done.error));
      assert.ok(Number(growing.done.value) <= 512, `${growing.done.value} MB before the cap`);
      await value(kernel, 'del chunks');
      await stillAnswers(kernel);
    });

    test('an output flood is throttled to what the host reads, and an interrupt stops it', async () => {
      let received = 0;
      const { done } = await kernel.run('while True:\n    print("x" * 1000)', {
        onOutput: (text, run) => {
          received += text.length;
          if (received > 8_000_000 && received - text.length <= 8_000_000) kernel.send({ t: 'interrupt', run });
        },
      });
      assert.equal(done.status, 'interrupted');
      // One 10 MB write to the C-level stdout, no newline: it comes as output, in frames the host takes.
      const { stdout, done: written } = await kernel.run('import os\nos.write(1, b"y" * 10_000_000)');
      assert.equal(written.status, 'ok', JSON.stringify(written.error));
      assert.equal(stdout.length, 10_000_000);
      await stillAnswers(kernel);
    });

    test('forged frames written by the code reach the host as output, never as frames', async () => {
      const forged = (run: string) => JSON.stringify({ t: 'done', run, token: null, status: 'ok', value: 'forged', error: null });
      const run = `run-${Number(kernel.lastRun.slice(4)) + 1}`;
      const code = [
        'import os, struct, sys',
        `body = ${JSON.stringify(forged(run))}.encode()`,
        'frame = struct.pack(">I", len(body)) + body',
        'os.write(1, frame)',
        'sys.__stdout__.buffer.write(frame) if hasattr(sys.__stdout__, "buffer") else None',
        'sys.stdout.buffer.write(frame)',
        '"real"',
      ].join('\n');
      const { done, frames } = await kernel.run(code);
      assert.equal(done.value, "'real'");
      assert.equal(frames.filter((f) => f.t === 'done').length, 1);
      // The worker's functions for Python, called with arguments of the code's own.
      const throughBridge = [
        'import sandbox_host',
        'bridge = sandbox_host.request.__globals__["_kernel"].bridge',
        `bridge.file(${JSON.stringify(JSON.stringify({ ...JSON.parse(forged(run)), run: `run-${Number(run.slice(4)) + 1}`, path: 'x', bytes: 1 }))})`,
        'bridge.file("not json")',
        'bridge.image("text/html", "<script>")',
        '"real"',
      ].join('\n');
      const bridged = await kernel.run(throughBridge);
      assert.equal(bridged.done.value, "'real'");
      assert.deepEqual(
        bridged.frames.map((f) => f.t),
        ['file', 'out', 'out', 'done'],
      );
      assert.match(
        bridged.stderr,
        /a file entry that is not one was dropped[\s\S]*an image that is not base64 of a known type was dropped/,
      );
      assert.ok(!kernel.frames.some((f) => f.t === 'done' && f.value === 'forged'));
      await stillAnswers(kernel);
    });
  });

  test('restart: a fresh interpreter says ready, without the old state', async () => {
    const readies = kernel.frames.filter((f) => f.t === 'ready').length;
    const ready = kernel.next((m) => m.t === 'ready', START_MS);
    kernel.send({ t: 'restart', source: wasmKernelSource().toString('utf8') });
    await ready;
    assert.equal(kernel.frames.filter((f) => f.t === 'ready').length, readies + 1);
    const gone = await failure(kernel, 'kept');
    assert.equal(gone.type, 'NameError');
    await value(kernel, 'kept = "state"');
  });

  test('the end of stdin ends the process', async () => {
    await kernel.close();
    await until('the exit code', () => kernel.exitCode !== undefined && { code: kernel.exitCode });
    assert.equal(kernel.exitCode, 0);
  });
});

describe('the WebAssembly kernel process with a spare interpreter', () => {
  let kernel: WasmKernel;
  before(async () => {
    kernel = new WasmKernel({}, { spare: true, snapshot: await interpreterSnapshot() });
    await kernel.ready();
  });
  after(async () => {
    await kernel?.close();
  });

  test('each restart gives a fresh interpreter, one ready each', async () => {
    for (let i = 1; i <= 2; i++) {
      await value(kernel, 'kept = "state"');
      const ready = kernel.next((m) => m.t === 'ready', START_MS);
      kernel.send({ t: 'restart', source: '' });
      await ready;
      assert.equal((await failure(kernel, 'kept')).type, 'NameError');
      assert.equal(kernel.frames.filter((f) => f.t === 'ready').length, i + 1);
    }
    assert.equal(await value(kernel, 'print("after")\n1 + 1'), '2');
  });
});

describe('the WebAssembly kernel process and a bomb of JavaScript objects', () => {
  let kernel: WasmKernel;
  before(async () => {
    kernel = new WasmKernel({}, { memoryMb: 128, snapshot: await interpreterSnapshot() });
    await kernel.ready();
    await value(kernel, 'kept = "state"');
  });
  after(async () => {
    await kernel?.close();
  });

  test('the interpreter that passes the memory limit ends, and a fresh one answers', async () => {
    // New JavaScript arrays of a million elements each, made by JavaScript itself: the memory
    // grows ten times as fast as converting Python lists element by element would make it.
    const code = [
      'from pyodide.ffi import to_js',
      'seed = to_js(list(range(100000)))',
      'keep = []',
      'while True:',
      '    keep.append(seed.concat(seed, seed, seed, seed, seed, seed, seed, seed, seed))',
    ].join('\n');
    const { done } = await kernel.run(code);
    assert.equal(done.status, 'error');
    assert.equal(done.error?.type, 'KernelDied');
    assert.match(done.error?.message ?? '', /memory limit \(640 MB\)[\s\S]*state is lost/);
    assert.equal((await failure(kernel, 'kept')).type, 'NameError');
    assert.equal(await value(kernel, '1 + 1'), '2');
    assert.equal(kernel.exitCode, undefined, 'the process lives on');
  });
});

describe('the interpreter snapshot', () => {
  const cache = mkdtempSync(join(tmpdir(), 'cem-snapshot-'));
  const previous = process.env.CEM_CACHE_DIR;
  after(() => {
    if (previous === undefined) delete process.env.CEM_CACHE_DIR;
    else process.env.CEM_CACHE_DIR = previous;
    rmSync(cache, { recursive: true, force: true });
  });

  test('is made once into an owner-only file, a stale lock of a maker that died broken, and found after; old versions go', async () => {
    process.env.CEM_CACHE_DIR = join(cache, 'made');
    const file = snapshotFile(process.env.CEM_CACHE_DIR);
    mkdirSync(process.env.CEM_CACHE_DIR, { recursive: true });
    writeFileSync(`${file}.lock`, '');
    const old = new Date(Date.now() - 10 * 60_000);
    utimesSync(`${file}.lock`, old, old);
    // Snapshots of other versions: one made eight days ago, one today.
    const [stale, recent] = ['0', '1'].map((d) => join(process.env.CEM_CACHE_DIR!, `pyodide-${d.repeat(16)}.snapshot`)) as [string, string];
    for (const other of [stale, recent]) writeFileSync(other, 'x', { mode: 0o600 });
    const eightDays = new Date(Date.now() - 8 * 24 * 3600_000);
    utimesSync(stale, eightDays, eightDays);
    // Two starts at once share one maker.
    const [first, second] = await Promise.all([interpreterSnapshot(), interpreterSnapshot()]);
    assert.equal(first, file);
    assert.equal(second, file);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(existsSync(`${file}.lock`), false);
    assert.deepEqual([existsSync(stale), existsSync(recent)], [false, true]);
    const made = statSync(file).mtimeMs;
    assert.equal(await interpreterSnapshot(), file);
    assert.equal(statSync(file).mtimeMs, made, 'not made again');
  });

  test('a start that finds another process making it waits, and starts from what that one made', async () => {
    const made = snapshotFile(join(cache, 'made'));
    process.env.CEM_CACHE_DIR = join(cache, 'waited');
    const file = snapshotFile(process.env.CEM_CACHE_DIR);
    mkdirSync(process.env.CEM_CACHE_DIR, { recursive: true });
    writeFileSync(`${file}.lock`, '');
    const waiting = interpreterSnapshot();
    // A turn of the event loop: a start that would not wait has settled by then, on nothing.
    await new Promise((resolve) => setImmediate(resolve));
    // The other maker finishes: its file in place, then its lock gone.
    copyFileSync(made, `${file}.partial`);
    chmodSync(`${file}.partial`, 0o600);
    renameSync(`${file}.partial`, file);
    const copied = statSync(file).ino;
    rmSync(`${file}.lock`);
    assert.equal(await waiting, file, 'not a start from scratch');
    assert.equal(statSync(file).ino, copied, "the other maker's file, not one made again");
  });

  test('a start waiting for another maker goes on without it when that maker fails, or after its wait limit', async () => {
    const file = snapshotFile(join(cache, 'failed'));
    mkdirSync(join(cache, 'failed'), { recursive: true });
    writeFileSync(`${file}.lock`, '');
    const waiting = makeSnapshot(file, 600_000);
    await new Promise((resolve) => setImmediate(resolve));
    // The other maker failed: its lock goes, no snapshot came.
    rmSync(`${file}.lock`);
    await waiting;
    assert.equal(existsSync(file), false);
    // A maker that hangs (its lock stays fresh): the wait ends at its limit.
    writeFileSync(`${file}.lock`, '');
    const started = Date.now();
    await makeSnapshot(file, 300);
    assert.ok(Date.now() - started >= 300, 'waited for the limit');
    assert.equal(existsSync(file), false);
    assert.equal(existsSync(`${file}.lock`), true, "the other maker's lock is left to it");
  });

  test('interpreters restored from it are fresh and apart: their own random numbers, no state of another', async () => {
    const snapshot = await interpreterSnapshot();
    const kernels = [new WasmKernel({}, { snapshot }), new WasmKernel({}, { snapshot })];
    try {
      await Promise.all(kernels.map((k) => k.ready()));
      const [a, b] = kernels as [WasmKernel, WasmKernel];
      await value(a, 'secret_of_a = 1');
      const draws = await Promise.all(kernels.map((k) => value(k, 'import random, secrets\n(random.random(), secrets.token_hex(8))')));
      assert.notEqual(draws[0], draws[1]);
      assert.equal((await failure(b, 'secret_of_a')).type, 'NameError');
    } finally {
      await Promise.all(kernels.map((k) => k.close()));
    }
  });

  test('a file that is not a snapshot: the interpreter starts from scratch, says so, and runs', async () => {
    const bad = join(cache, 'bad.snapshot');
    writeFileSync(bad, randomBytes(2 * 1024 * 1024), { mode: 0o600 });
    const kernel = new WasmKernel({}, { snapshot: bad });
    try {
      await kernel.ready();
      assert.equal(await value(kernel, '6 * 7'), '42');
      assert.match(kernel.stderr, /the interpreter snapshot did not load, so it starts from scratch/);
    } finally {
      await kernel.close();
    }
  });
});

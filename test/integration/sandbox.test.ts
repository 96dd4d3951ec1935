// The sandbox engine against real Podman and real Docker: behaviour, limits and hardening.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { execa } from 'execa';
import { after, before, describe, test } from 'node:test';
import { MAX_IMAGES_PER_RUN } from '../../src/sandbox/sessions/run-result.ts';
import type { RefusedRequest } from '../../src/sandbox/sessions/run-requests.ts';
import { SessionManager } from '../../src/sandbox/sessions/manager.ts';
import { testRuntimes, testSandbox } from '../helpers/env.ts';
import { until } from '../helpers/wait.ts';

for (const runtime of testRuntimes()) {
  describe(`sandbox on ${runtime}`, () => {
    let sandbox: SessionManager;
    before(() => {
      sandbox = new SessionManager(testSandbox(runtime));
    });
    after(async () => {
      await sandbox.close();
    });

    test('hello world', async () => {
      const result = await sandbox.execute('print("hello, world")');
      assert.equal(result.status, 'ok', JSON.stringify(result.error));
      assert.equal(result.stdout, 'hello, world\n');
      assert.equal(result.stderr, '');
      assert.equal(result.value, null);
    });

    test('state persists within a session and not across sessions', async () => {
      await sandbox.execute('counter = 41', { session: 'a' });
      const same = await sandbox.execute('counter += 1\ncounter', { session: 'a' });
      assert.equal(same.value, '42');
      assert.equal(same.coldStart, false);
      const other = await sandbox.execute('counter', { session: 'b' });
      assert.equal(other.status, 'error');
      assert.equal(other.error?.type, 'NameError');
      await sandbox.closeSession('b');
    });

    test('reset starts a fresh interpreter in the same container', async () => {
      await sandbox.execute('kept = 1', { session: 'r' });
      const container = sandbox.list().find((s) => s.name === 'r')?.container;
      const result = await sandbox.execute('"kept" in globals()', { session: 'r', reset: true });
      assert.equal(result.value, 'False');
      assert.equal(result.sessionLost, false);
      assert.equal(result.coldStart, false);
      assert.equal(sandbox.list().find((s) => s.name === 'r')?.container, container);
      await sandbox.closeSession('r');
    });

    test('the value of a last bare expression comes back as its repr', async () => {
      assert.equal((await sandbox.execute('x = [1, "two"]\nx')).value, "[1, 'two']");
      assert.equal((await sandbox.execute('None')).value, null);
      assert.equal((await sandbox.execute('y = 3')).value, null);
    });

    test('exceptions come back with type, message and a trimmed traceback', async () => {
      const result = await sandbox.execute('def f():\n    raise ValueError("bad thing")\nf()');
      assert.equal(result.status, 'error');
      assert.equal(result.error?.type, 'ValueError');
      assert.equal(result.error?.message, 'bad thing');
      assert.match(result.error?.traceback ?? '', /line 2, in f\n\s+raise ValueError/);
      assert.doesNotMatch(result.error?.traceback ?? '', /<kernel>/);
      const syntax = await sandbox.execute('def (:');
      assert.equal(syntax.error?.type, 'SyntaxError');
      const exit = await sandbox.execute('import sys\nsys.exit(3)');
      assert.equal(exit.error?.type, 'SystemExit');
      assert.equal((await sandbox.execute('1 + 1')).value, '2', 'sys.exit must not end the kernel');
    });

    test('top-level await and asyncio work', async () => {
      const result = await sandbox.execute(
        'import asyncio\nasync def twice(x):\n    await asyncio.sleep(0.01)\n    return 2 * x\nawait asyncio.gather(twice(1), twice(2))',
      );
      assert.equal(result.value, '[2, 4]');
    });

    test('stdout and stderr are captured separately, subprocess output too', async () => {
      const result = await sandbox.execute(
        'import sys, subprocess\nprint("out")\nprint("err", file=sys.stderr)\nsubprocess.run(["echo", "child"])',
      );
      assert.equal(result.stdout, 'out\nchild\n');
      assert.equal(result.stderr, 'err\n');
    });

    test('a 10 MB print is capped, reported, and the next run still works', async () => {
      const result = await sandbox.execute('print("A" * 5_000_000 + "B" * 5_000_000)');
      assert.equal(result.status, 'ok');
      assert.equal(result.truncated, true);
      assert.ok(result.omitted.stdout > 9_000_000);
      assert.ok(result.stdout.length < 300 * 1024);
      assert.ok(result.stdout.startsWith('AAAA') && result.stdout.trimEnd().endsWith('BBBB'));
      assert.match(result.stdout, /characters omitted/);
      assert.equal((await sandbox.execute('print("still here")')).stdout, 'still here\n');
    });

    test('an infinite loop is interrupted by the timeout and the session survives', async () => {
      await sandbox.execute('survivor = "yes"', { session: 't' });
      const result = await sandbox.execute('while True:\n    pass', { session: 't', timeoutMs: 1000 });
      assert.equal(result.status, 'timeout');
      assert.equal(result.sessionLost, false);
      assert.match(result.error?.traceback ?? '', /KeyboardInterrupt/);
      // The result says the state is kept, so the model need not set it up again.
      assert.match(result.error?.message ?? '', /was interrupted\. The session's state \(variables, imports\) is kept\.$/);
      const next = await sandbox.execute('survivor', { session: 't' });
      assert.equal(next.value, "'yes'");
      assert.equal(next.coldStart, false);
    });

    test('code that ignores the interrupt loses its interpreter, not its container', async () => {
      await sandbox.execute('doomed = 1', { session: 't' });
      const container = sandbox.list().find((s) => s.name === 't')?.container;
      const stubborn = 'while True:\n    try:\n        while True:\n            pass\n    except KeyboardInterrupt:\n        pass';
      const result = await sandbox.execute(stubborn, { session: 't', timeoutMs: 500 });
      assert.equal(result.status, 'timeout');
      assert.equal(result.sessionLost, true);
      // The kernel saw the interrupt caught: the code got a moment to end, not the whole grace.
      assert.match(
        result.error?.message ?? '',
        /It went on after the interrupt, so its interpreter was restarted; the session's state is lost/,
      );
      const next = await sandbox.execute('"doomed" in globals()', { session: 't' });
      assert.equal(next.value, 'False');
      assert.equal(next.coldStart, false);
      assert.equal(sandbox.list().find((s) => s.name === 't')?.container, container);
      await sandbox.closeSession('t');
    });

    test('code that ignores SIGINT is told apart too, and its session goes on in a fresh interpreter', async () => {
      const deaf = 'import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass';
      const result = await sandbox.execute(deaf, { session: 'deaf', timeoutMs: 300 });
      assert.equal(result.status, 'timeout');
      assert.match(result.error?.message ?? '', /It went on after the interrupt, so its interpreter was restarted/);
      assert.equal((await sandbox.execute('1', { session: 'deaf' })).value, '1');
      await sandbox.closeSession('deaf');
    });

    test('code that catches its interrupt and then ends keeps its session', async () => {
      const polite = 'import time\ntry:\n    time.sleep(30)\nexcept KeyboardInterrupt:\n    caught = True\n"done"';
      const result = await sandbox.execute(polite, { session: 'polite', timeoutMs: 300 });
      assert.equal(result.status, 'ok');
      assert.equal(result.value, "'done'");
      assert.equal((await sandbox.execute('caught', { session: 'polite' })).value, 'True');
      await sandbox.closeSession('polite');
    });

    test('a cancelled run stops', async () => {
      const abort = new AbortController();
      setTimeout(() => abort.abort(), 300);
      const started = Date.now();
      const result = await sandbox.execute('import time\ntime.sleep(30)', { signal: abort.signal });
      assert.equal(result.status, 'cancelled');
      assert.ok(Date.now() - started < 5000);
      assert.equal((await sandbox.execute('1')).value, '1');
    });

    test("what the code writes never reaches the engine's logs", async () => {
      const marker = `not-for-the-log-${randomBytes(6).toString('hex')}`;
      const result = await sandbox.execute(`print("${marker}")\nimport sys\nprint("${marker}", file=sys.stderr)`, { session: 'logs' });
      assert.equal(result.stdout, `${marker}\n`, JSON.stringify(result.error));
      const container = sandbox.list().find((s) => s.name === 'logs')?.container;
      assert.ok(container, 'the session has a container');
      const driver = await execa(runtime, ['inspect', '--format', '{{.HostConfig.LogConfig.Type}}', container]);
      assert.equal(driver.stdout.trim(), 'none');
      const logs = await execa(runtime, ['logs', container], { reject: false });
      assert.ok(!`${logs.stdout}${logs.stderr}`.includes(marker), `the engine logged the output: ${logs.stdout.slice(0, 200)}`);
      await sandbox.closeSession('logs');
    });

    test('there is no network', async () => {
      const server = createServer((socket) => socket.destroy());
      let connections = 0;
      server.on('connection', () => connections++);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const port = (server.address() as AddressInfo).port;
      try {
        const result = await sandbox.execute(
          [
            'import socket',
            'names = [n for _, n in socket.if_nameindex()]',
            'try:',
            `    socket.create_connection(("127.0.0.1", ${port}), timeout=2)`,
            '    outcome = "connected"',
            'except OSError as e:',
            '    outcome = type(e).__name__',
            'routes = open("/proc/net/route").read().strip().splitlines()[1:]',
            '(names, outcome, routes)',
          ].join('\n'),
        );
        assert.equal(result.value, "(['lo'], 'ConnectionRefusedError', [])");
        assert.equal(connections, 0);
      } finally {
        server.close();
      }
    });

    test('the root file system is read-only, the work dir and /tmp are writable but not executable', async () => {
      const result = await sandbox.execute(
        [
          'import os, subprocess',
          'def attempt(f):',
          '    try:',
          '        f(); return "ok"',
          '    except OSError as e:',
          '        return e.strerror',
          'def write(p):',
          '    open(p, "w").write("#!/bin/sh\\necho ran\\n")',
          'root = attempt(lambda: write("/usr/x"))',
          'work = attempt(lambda: write("/work/s.sh"))',
          'tmp = attempt(lambda: write("/tmp/s.sh"))',
          'os.chmod("/tmp/s.sh", 0o755)',
          'run = attempt(lambda: subprocess.run(["/tmp/s.sh"]))',
          '(os.getcwd(), root, work, tmp, run)',
        ].join('\n'),
      );
      assert.equal(result.value, "('/work', 'Read-only file system', 'ok', 'ok', 'Permission denied')");
    });

    test('only /work, /tmp and /dev/shm are writable, and no host names are listed', async () => {
      const result = await sandbox.execute(
        [
          'import os',
          'writable = sorted(p for p in ("/", "/run", "/var/tmp", "/tmp", "/work", "/dev/shm", "/home", "/etc") if os.access(p, os.W_OK))',
          'hosts = open("/etc/hosts").read() if os.path.exists("/etc/hosts") else ""',
          '(writable, "host.containers.internal" in hosts or "host.docker.internal" in hosts)',
        ].join('\n'),
      );
      assert.equal(result.value, "(['/dev/shm', '/tmp', '/work'], False)");
    });

    test('allowed extra run arguments take effect', async () => {
      const extra = new SessionManager(testSandbox(runtime, { extraRunArgs: ['--shm-size', '24m'], prewarm: false }));
      try {
        const result = await extra.execute('import os\ns = os.statvfs("/dev/shm")\ns.f_blocks * s.f_frsize // 2**20');
        assert.equal(result.value, '24', JSON.stringify(result.error));
      } finally {
        await extra.close();
      }
    });

    test('the code runs unprivileged and cannot gain privileges', async () => {
      const result = await sandbox.execute(
        [
          'import os',
          'status = dict(l.split(":\\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\\t" in l)',
          'try:',
          '    os.setuid(0); gained = True',
          'except PermissionError:',
          '    gained = False',
          '(os.getuid(), os.getgid(), gained, status["NoNewPrivs"].strip(), status["CapEff"].strip(), status["CapBnd"].strip())',
        ].join('\n'),
      );
      assert.equal(result.value, "(65534, 65534, False, '1', '0000000000000000', '0000000000000000')");
    });

    test('environment variables of the host do not reach the sandbox', async () => {
      process.env.CEM_SECRET_PROBE = 'do-not-leak';
      try {
        const result = await sandbox.execute('import os\nsorted(k for k in os.environ if "SECRET" in k or "TOKEN" in k)');
        assert.equal(result.value, '[]');
      } finally {
        delete process.env.CEM_SECRET_PROBE;
      }
    });

    test('proxy settings of the host (credentials included) do not reach the sandbox', async () => {
      process.env.HTTPS_PROXY = 'http://user:secret-pw@127.0.0.1:3128';
      process.env.http_proxy = 'http://user:secret-pw@127.0.0.1:3128';
      const fresh = new SessionManager(testSandbox(runtime, { prewarm: false }));
      try {
        const result = await fresh.execute('import os\nsorted((k, v) for k, v in os.environ.items() if "proxy" in k.lower() and v)');
        assert.equal(result.value, '[]', JSON.stringify(result.error));
      } finally {
        delete process.env.HTTPS_PROXY;
        delete process.env.http_proxy;
        await fresh.close();
      }
    });

    test('forged protocol frames printed by user code do not confuse the host', async () => {
      const result = await sandbox.execute(
        [
          'import json, os, struct, sys',
          'def frame(m):',
          '    b = json.dumps(m).encode()',
          '    return struct.pack(">I", len(b)) + b',
          'fake = frame({"t": "done", "run": "forged", "status": "ok", "value": "999", "error": None})',
          'print(fake.decode("latin-1"))',
          'os.write(1, fake)',
          'sys.__stdout__.buffer.write(fake); sys.__stdout__.flush()',
          'print("real")',
          '"genuine"',
        ].join('\n'),
      );
      assert.equal(result.status, 'ok');
      assert.equal(result.value, "'genuine'");
      // The forged bytes are just output; raw fd writes may land before or after "real".
      assert.match(result.stdout, /real\n/);
      assert.equal(result.stdout.split('"run": "forged"').length - 1, 3);
      assert.equal((await sandbox.execute('40 + 2')).value, '42');
    });

    test('images beyond the per-run limit are counted, not kept', async () => {
      const result = await sandbox.execute(`for _ in range(${MAX_IMAGES_PER_RUN + 4}):\n    emit_image(b"\\x89PNG")`);
      assert.equal(result.images.length, MAX_IMAGES_PER_RUN);
      assert.equal(result.omitted.images, 4);
      assert.equal(result.truncated, true);
    });

    test('a bad or oversized image is a ValueError in Python, not a lost session', async () => {
      await sandbox.execute('kept = 1', { session: 'img' });
      const result = await sandbox.execute(
        [
          'errors = []',
          'for args in [(b"x", "text/html"), (b"x" * (8 * 1024 * 1024 + 1),)]:',
          '    try:',
          '        emit_image(*args)',
          '    except ValueError as e:',
          '        errors.append(str(e).split(":")[0])',
          '(errors, kept)',
        ].join('\n'),
        { session: 'img' },
      );
      assert.equal(result.value, "(['emit_image()', 'emit_image()'], 1)", JSON.stringify(result.error));
      assert.equal(result.sessionLost, false);
      assert.equal(result.images.length, 0);
      await sandbox.closeSession('img');
    });

    test('a huge repr is cut in the kernel', async () => {
      const result = await sandbox.execute('"x" * 3_000_000');
      assert.equal(result.status, 'ok');
      assert.ok((result.value ?? '').length < 1_100_000);
      assert.match(result.value ?? '', /\[repr cut at 1048576 characters\]$/);
    });

    test('nothing the code prints or raises ends its session', async () => {
      await sandbox.execute('kept = "yes"', { session: 'caps' });
      const literal = `data = [${'"ab", '.repeat(75_000)}1 2]`; // ~450 KB on one line, a comma missing at the end
      const typoFirst = `data = [1 2, ${'"ab", '.repeat(75_000)}]`;
      const cases: Array<[string, string, string | null]> = [
        ['a 450 KB one-line literal with a syntax error at its end', literal, 'SyntaxError'],
        ['the same with the error at its start', typoFirst, 'SyntaxError'],
        ['a huge exception message', 'raise ValueError("m" * 5_000_000)', 'ValueError'],
        ['a huge message of astral characters', 'raise ValueError("\\U0001F600" * 100_000)', 'ValueError'],
        ['lone surrogates', 'print("\\ud800" * 1000)\nraise ValueError("\\udc80" * 50_000)', 'ValueError'],
        ['a deep recursion', 'def f(n):\n    return f(n + 1)\nf(0)', 'RecursionError'],
        [
          'a long chain of exceptions with long messages',
          'e = None\nfor i in range(300):\n    try:\n        raise ValueError(str(i) * 20_000) from e\n    except ValueError as x:\n        e = x\nraise e',
          'ValueError',
        ],
        [
          'a huge source line in every frame',
          `def f(n):\n    return f(n + 1) if n < 200 else 1 / 0  # ${'x'.repeat(200_000)}\nf(0)`,
          'ZeroDivisionError',
        ],
        ['a huge exception type name', 'raise type("E" * 100_000, (Exception,), {})("x")', 'E'.repeat(120)],
        [
          'an exception whose str() raises',
          'class Bad(Exception):\n    def __str__(self):\n        raise RuntimeError("no")\nraise Bad()',
          'Bad',
        ],
        ['a repr that raises', 'class R:\n    def __repr__(self):\n        raise ValueError("no")\nR()', null],
        ['a huge stderr write', 'import sys\nsys.stderr.write("e" * 20_000_000)', null],
        ['a huge value', '"v" * 20_000_000', null],
      ];
      for (const [what, code, type] of cases) {
        const result = await sandbox.execute(code, { session: 'caps' });
        assert.equal(result.sessionLost, false, `${what}: ${result.error?.message}`);
        assert.equal(result.error?.type ?? null, type, `${what}: ${result.error?.type}`);
        assert.ok((result.error?.message.length ?? 0) <= 64 * 1024, what);
        assert.ok((result.error?.traceback.length ?? 0) <= 256 * 1024, what);
        if (type === 'SyntaxError')
          assert.ok(result.error!.traceback.length < 2000, `${what}: ${result.error!.traceback.length} characters`);
        assert.equal((await sandbox.execute('kept', { session: 'caps' })).value, "'yes'", what);
      }
      const requests = await sandbox.execute(
        [
          'import sandbox_host',
          'errors = []',
          'for args in [("m" * 100, {}), ("echo", {"x": float("nan")}), ("echo", {"x": object()}), ("echo", "p" * 40_000_000)]:',
          '    try:',
          '        sandbox_host.request_sync(*args)',
          '    except (ValueError, TypeError) as e:',
          '        errors.append(type(e).__name__)',
          'errors',
        ].join('\n'),
        { session: 'caps' },
      );
      assert.equal(requests.value, "['ValueError', 'ValueError', 'TypeError', 'ValueError']", JSON.stringify(requests.error));
      assert.equal(requests.sessionLost, false);
      await sandbox.closeSession('caps');
    });

    test('a forged done frame does not end the run', async () => {
      const result = await sandbox.execute(
        [
          'import gc, sys, time',
          'send = sys.modules["__main__"]._send',
          'run = sys.modules["__main__"]._state.run',
          'send({"t": "done", "run": run, "status": "ok", "value": "\'forged\'", "error": None})',
          'send({"t": "done", "run": run, "token": "0" * 32, "status": "ok", "value": "\'forged\'", "error": None})',
          'send([f for f in gc.get_objects() if getattr(f, "__name__", "") == "_send"] and {"t": "done", "run": run, "token": None, "status": "ok", "value": "1", "error": None})',
          'time.sleep(0.5)',
          'print("still running")',
          '"genuine"',
        ].join('\n'),
      );
      assert.equal(result.status, 'ok', JSON.stringify(result.error));
      assert.equal(result.value, "'genuine'");
      assert.equal(result.stdout, 'still running\n');
    });

    test('our seccomp filter refuses user namespaces and io_uring; normal code still works', async () => {
      const probe = [
        'import ctypes, errno, multiprocessing, subprocess, threading',
        'libc = ctypes.CDLL(None, use_errno=True)',
        'params = ctypes.create_string_buffer(120)',
        'ring = libc.syscall(ctypes.c_long(425), ctypes.c_ulong(8), params)',
        'io_uring = errno.errorcode.get(ctypes.get_errno()) if ring == -1 else "allowed"',
        'userns = subprocess.run(["unshare", "-Urm", "true"], capture_output=True, text=True)',
        'status = dict(l.split(":\\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\\t" in l)',
        'box = []',
        't = threading.Thread(target=box.append, args=(1,)); t.start(); t.join()',
        'with multiprocessing.Pool(2) as pool:',
        '    squares = pool.map(abs, [-1, -2, -3])',
        'echo = subprocess.run(["echo", "hi"], capture_output=True, text=True).stdout',
        'filters = status.get("Seccomp_filters", "?").strip()',
        '(io_uring, userns.returncode != 0, "Operation not permitted" in userns.stderr, box, squares, echo, status["Seccomp"].strip())',
      ].join('\n');
      const result = await sandbox.execute(probe, { session: 'seccomp' });
      assert.equal(result.value, "('EPERM', True, True, [1], [1, 2, 3], 'hi\\n', '2')", JSON.stringify(result.error));
      // A restarted interpreter keeps the filter and does not stack another copy.
      const before = (await sandbox.execute('filters', { session: 'seccomp' })).value;
      const again = await sandbox.execute(`${probe}\n(io_uring, filters)`, { session: 'seccomp', reset: true });
      assert.equal(again.value, `('EPERM', ${before})`, JSON.stringify(again.error));
      await sandbox.closeSession('seccomp');
    });

    test('PID 1 is out of reach: its memory, syscall and environment unreadable, no signal or ptrace reaches it, and it has our filter', async () => {
      // The injection that escaped an init binary's weaker filter: read /proc/1/syscall, write
      // /proc/1/mem, signal PID 1. Every process in the container must carry the kernel's filter.
      const attack = [
        'import ctypes, errno, os, signal',
        'def attempt(f):',
        '    try:',
        '        f()',
        '        return "allowed"',
        '    except OSError as e:',
        '        return errno.errorcode.get(e.errno, str(e.errno))',
        'def filters(pid):',
        '    for line in open("/proc/%s/status" % pid):',
        '        if line.startswith("Seccomp_filters:"):',
        '            return line.split()[1]',
        'libc = ctypes.CDLL(None, use_errno=True)',
        'def ptrace_attach():',
        '    if libc.ptrace(ctypes.c_long(16), ctypes.c_long(1), None, None) == -1:',
        '        raise OSError(ctypes.get_errno(), "ptrace")',
        'def write_mem():',
        '    with open("/proc/1/mem", "r+b") as f:',
        '        f.write(b"\\xcc")',
        'found = {',
        '    "syscall": attempt(lambda: open("/proc/1/syscall").read()),',
        '    "mem": attempt(write_mem),',
        '    "environ": attempt(lambda: open("/proc/1/environ", "rb").read()),',
        '    "signals": sorted({attempt(lambda s=s: os.kill(1, s)) for s in (0, signal.SIGTERM, signal.SIGKILL, signal.SIGSTOP, signal.SIGINT)}),',
        '    "ptrace": attempt(ptrace_attach),',
        '    "filters": sorted({filters(p) for p in os.listdir("/proc") if p.isdigit()}) == [filters("self")],',
        '    "pid1": os.path.basename(open("/proc/1/cmdline", "rb").read().split(b"\\0")[0].decode()),',
        '}',
        'found',
      ].join('\n');
      const result = await sandbox.execute(attack, { session: 'pid1' });
      assert.equal(result.status, 'ok', JSON.stringify(result.error));
      assert.equal(
        result.value,
        "{'syscall': 'EACCES', 'mem': 'EACCES', 'environ': 'EACCES', 'signals': ['EPERM'], 'ptrace': 'EPERM', 'filters': True, 'pid1': 'python3'}",
      );
      // The session and its PID 1 are still there, and so is the protection after a reset.
      assert.equal((await sandbox.execute('found["pid1"]', { session: 'pid1' })).value, "'python3'");
      const again = await sandbox.execute(`${attack}\n(found["mem"], found["signals"], found["filters"])`, {
        session: 'pid1',
        reset: true,
      });
      assert.equal(again.value, "('EACCES', ['EPERM'], True)", JSON.stringify(again.error));
      await sandbox.closeSession('pid1');
    });

    test('orphans of the code are reaped by PID 1, so zombies never fill the pids limit', async () => {
      const code = [
        'import os, time',
        'def zombies():',
        '    found = 0',
        '    for p in os.listdir("/proc"):',
        '        try:',
        '            if p.isdigit() and open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()[0] == "Z":',
        '                found += 1',
        '        except OSError:',
        '            pass',
        '    return found',
        'def others():',
        '    return [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())]',
        'for _ in range(20):',
        '    child = os.fork()',
        '    if child == 0:',
        '        if os.fork() == 0:',
        '            os._exit(0)  # the grandchild: an orphan once its parent is gone',
        '        os._exit(0)',
        '    os.waitpid(child, 0)',
        // Until every grandchild has ended and been reaped (a slow one may still be running, then
        // a zombie for a moment): a zombie PID 1 never reaps keeps this waiting, and is counted.
        'deadline = time.monotonic() + 10',
        'while others() and time.monotonic() < deadline:',
        '    time.sleep(0.01)',
        'zombies()',
      ].join('\n');
      const result = await sandbox.execute(code, { session: 'orphans' });
      assert.equal(result.value, '0', JSON.stringify(result.error));
      await sandbox.closeSession('orphans');
    });

    test('sys.stdout.buffer and sys.stderr.buffer take bytes, even a character split between writes', async () => {
      const result = await sandbox.execute(
        [
          'import sys',
          'n = sys.stdout.buffer.write("h\u00e9llo ".encode())',
          'sys.stdout.buffer.write(b"\\xc3")',
          'sys.stdout.buffer.write(bytearray(b"\\xa9\\n"))',
          'sys.stdout.buffer.flush()',
          'sys.stderr.buffer.write(b"err\\n")',
          'try:',
          '    sys.stdout.buffer.write("text")',
          'except TypeError:',
          '    print("str refused")',
          'n',
        ].join('\n'),
      );
      assert.equal(result.status, 'ok', JSON.stringify(result.error));
      assert.equal(result.stdout, 'h\u00e9llo \u00e9\nstr refused\n');
      assert.equal(result.stderr, 'err\n');
      assert.equal(result.value, '7');
    });

    test('a request too big for the host raises in the code, and the session goes on', async () => {
      const result = await sandbox.execute(
        [
          'import sandbox_host',
          'try:',
          '    sandbox_host.request_sync("call_tool", {"server": "x", "tool": "y", "arguments": {"blob": "b" * (11 * 1024 * 1024)}})',
          'except ValueError as e:',
          '    print(e)',
          'kept = 1',
        ].join('\n'),
        { session: 'big-request' },
      );
      assert.equal(result.status, 'ok', JSON.stringify(result.error));
      assert.match(result.stdout, /the request is \d+ bytes; the limit is 10485760/);
      assert.equal((await sandbox.execute('kept', { session: 'big-request' })).value, '1');
      await sandbox.closeSession('big-request');
    });

    test('code can emit images', async () => {
      const png = '\\x89PNG\\r\\n\\x1a\\n' + 'rest';
      const result = await sandbox.execute(`emit_image(b"${png}")\nimport sandbox_host\nsandbox_host.emit_image(b"GIF89a", "image/gif")`);
      assert.equal(result.images.length, 2);
      assert.equal(Buffer.from(result.images[0]!.data, 'base64').subarray(0, 4).toString('latin1'), '\x89PNG');
      assert.equal(result.images[1]!.mime, 'image/gif');
    });
  });
}

for (const runtime of testRuntimes()) {
  describe(`hostile frames on ${runtime}`, () => {
    let sandbox: SessionManager;
    before(() => {
      sandbox = new SessionManager(testSandbox(runtime));
    });
    after(async () => {
      await sandbox.close();
    });

    // User code shares the kernel's process, so it can reach the real protocol channel.
    const cases: Array<[string, string]> = [
      ['an invalid frame', 'os.write(__main__._out_fd, struct.pack(">I", 9) + b"not json!")'],
      ['a frame of the wrong shape', '__main__._send({"t": "out", "run": 5, "stream": "nowhere"})'],
      ['an oversized frame header', 'os.write(__main__._out_fd, struct.pack(">I", 0xFFFFFFF0))'],
    ];
    for (const [what, code] of cases) {
      test(`${what} on the protocol channel ends the session, not the host`, async () => {
        await sandbox.execute('state = 1', { session: 'h' });
        const result = await sandbox.execute(`import __main__, os, struct, time\n${code}\ntime.sleep(30)`, { session: 'h' });
        assert.equal(result.status, 'error');
        assert.equal(result.sessionLost, true);
        assert.match(result.error?.message ?? '', /protocol error/);
        const next = await sandbox.execute('"state" in globals()', { session: 'h' });
        assert.equal(next.value, 'False');
      });
    }
  });
}

for (const runtime of testRuntimes()) {
  describe(`a forged end of run on ${runtime}`, () => {
    let sandbox: SessionManager;
    const served: string[] = [];
    const refused: RefusedRequest[] = [];
    before(() => {
      sandbox = new SessionManager(testSandbox(runtime), {
        onRequest: async (method, _params, context) => {
          served.push(`${context.runId} ${method}`);
          return 'served';
        },
        onRefusedRequest: (request) => refused.push(request),
      });
    });
    after(async () => {
      await sandbox.close();
    });

    test('a done with the stolen token ends the run early, but the code after it is refused, logged, and the next run restarts the interpreter', async () => {
      await sandbox.execute('kept = 1', { session: 'f' });
      // The attack: dig the run's token out of the kernel's frame, send `done` with it, go on.
      const forge = [
        'import __main__, sys, sandbox_host',
        'f = sys._getframe()',
        'while f.f_code.co_name != "_execute":',
        '    f = f.f_back',
        'm = f.f_locals["message"]',
        '__main__._send({"t": "done", "run": m["run"], "token": m["token"], "status": "ok", "value": "\'forged\'", "error": None})',
        'try:',
        '    after_end = sandbox_host.request_sync("list_servers")',
        'except sandbox_host.HostError as e:',
        '    after_end = e.type',
        'after_end',
      ].join('\n');
      const first = await sandbox.execute(forge, { session: 'f', runId: 'run-forged' });
      assert.equal(first.value, "'forged'");
      // The real `done` follows the forged one: between runs (the next run restarts the
      // interpreter first and says why) or during the next run (which then ends with the error).
      const next = await sandbox.execute('"kept" in globals()', { session: 'f', runId: 'run-next' });
      if (next.status === 'ok') {
        assert.equal(next.value, 'False');
        assert.equal(next.sessionChange?.kind, 'lost');
        assert.match(
          next.sessionChange?.reason ?? '',
          /run-forged\) forged the end of its run and went on running, so the interpreter was restarted/,
        );
      } else {
        assert.equal(next.error?.type, 'ForgedRunEnd', JSON.stringify(next.error));
        assert.match(next.error?.message ?? '', /end of an earlier run \(run-forged\) during this one.*so its interpreter was restarted/);
        assert.equal((await sandbox.execute('"kept" in globals()', { session: 'f' })).value, 'False');
      }
      assert.deepEqual(served, [], 'nothing after the forged end was served');
      // Refused, on record under the host's run of the moment, naming the run the code claimed.
      assert.deepEqual(
        refused.map((r) => r.method),
        ['list_servers'],
      );
      assert.ok(['run-forged', 'run-next'].includes(refused[0]!.run), refused[0]!.run);
      assert.match(refused[0]!.reason, /run-forged/);
    });

    test('calls from a thread the code left running are refused once its run has ended, and put on record', async () => {
      refused.length = 0;
      served.length = 0;
      // The thread calls until a call is refused: the first after run-left's end.
      const left = [
        'import threading, sandbox_host',
        'outcome = []',
        'def calls():',
        '    while True:',
        '        try:',
        '            sandbox_host.request_sync("call_tool", {"server": "memory", "tool": "read_graph"})',
        '        except sandbox_host.HostError as e:',
        '            outcome.append(e.type)',
        '            return',
        'worker = threading.Thread(target=calls)',
        'worker.start()',
      ].join('\n');
      await sandbox.execute(left, { session: 't', runId: 'run-left' });
      await until('a refused call', () => refused.length > 0);
      const next = await sandbox.execute('worker.join(20)\noutcome', { session: 't', runId: 'run-after' });
      assert.equal(next.value, "['RunEnded']", JSON.stringify(next.error));
      assert.ok(
        served.every((s) => s === 'run-left call_tool'),
        served.join(),
      );
      assert.deepEqual(
        refused.map((r) => [r.run, r.method]),
        [['run-left', 'call_tool']],
      );
      assert.match(refused[0]!.reason, /run run-left after its end/);
    });
  });
}

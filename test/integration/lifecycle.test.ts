// Sessions over time: requests to the host, idle reaping, the session cap, clean-up of every
// container (at close, after a crash of the owner, at process exit), and clear errors.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, test } from 'node:test';
import { ImageMissingError, RuntimeUnavailableError } from '../../src/sandbox/errors.ts';
import { listOwnedContainers } from '../../src/sandbox/container/cleanup.ts';
import { runCli } from '../../src/sandbox/engines/cli.ts';
import { LABEL, OWNER_LABEL, removeArgs, SESSION_LABEL } from '../../src/sandbox/engines/commands.ts';
import { KernelContainer, OWNER } from '../../src/sandbox/container/kernel-container.ts';
import { runOnContainer } from '../../src/sandbox/sessions/run.ts';
import { MAX_REQUESTS_IN_FLIGHT } from '../../src/sandbox/sessions/run-requests.ts';
import { preludeCode } from '../../src/bridge/sandbox-api/prelude.ts';
import { SessionManager } from '../../src/sandbox/sessions/manager.ts';
import { TEST_IMAGE, testRuntimes, testSandbox } from '../helpers/env.ts';
import { Meeting } from '../helpers/meeting.ts';

async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await sleep(200);
  }
  return check();
}

async function exists(runtime: string, name: string): Promise<boolean> {
  const ids = await runCli(runtime, ['ps', '-a', '--filter', `name=${name}`, '--format', '{{.ID}}']);
  return ids.stdout.trim() !== '';
}

/** This process's containers whose session name starts with `prefix`. */
async function sessionContainers(runtime: string, prefix: string): Promise<string[]> {
  const ids = (await runCli(runtime, ['ps', '-a', '--filter', `label=${OWNER_LABEL}=${OWNER}`, '--format', '{{.ID}}'])).stdout
    .split('\n')
    .filter(Boolean);
  if (ids.length === 0) return [];
  const lines = await runCli(runtime, ['container', 'inspect', '--format', '{{.Id}}\t{{json .Config.Labels}}', ...ids]).then(
    (r) => r.stdout.split('\n'),
    () => [],
  );
  return lines.filter((line) => {
    const labels = JSON.parse(line.split('\t')[1] ?? '{}') as Record<string, string>;
    return labels[SESSION_LABEL]?.startsWith(prefix);
  });
}

for (const runtime of testRuntimes()) {
  describe(`lifecycle on ${runtime}`, () => {
    const managers: SessionManager[] = [];
    const manager = (overrides = {}, options = {}) => {
      const m = new SessionManager(testSandbox(runtime, overrides), options);
      managers.push(m);
      return m;
    };
    after(async () => {
      await Promise.all(managers.map((m) => m.close()));
    });

    test('requests from sandboxed code reach the host and run concurrently', async () => {
      // The five echoes are answered once all five are out at the host (one at a time, each would wait 10 s).
      const meeting = new Meeting(5);
      const sandbox = manager(
        {},
        {
          onRequest: async (method: string, params: unknown) => {
            if (method === 'fail') throw new Error('refused on purpose');
            await meeting.join();
            return { method, params };
          },
        },
      );
      const result = await sandbox.execute(
        [
          'import asyncio, sandbox_host',
          'answers = await asyncio.gather(*[sandbox_host.request("echo", {"i": i}) for i in range(5)])',
          'try:',
          '    await sandbox_host.request("fail")',
          '    failure = None',
          'except sandbox_host.HostError as e:',
          '    failure = (e.type, str(e))',
          '([a["params"]["i"] for a in answers], failure)',
        ].join('\n'),
      );
      assert.equal(result.status, 'ok', JSON.stringify(result.error));
      assert.equal(result.value, "([0, 1, 2, 3, 4], ('Error', 'refused on purpose'))");
      assert.equal(meeting.most, 5, 'requests out at once');
      assert.equal(result.requests, 6);
    });

    test('tool calls work from any event loop and any thread, many at once', async () => {
      let inFlight = 0;
      let peak = 0;
      const sandbox = manager(
        {},
        {
          prelude: preludeCode([{ name: 'echo', alias: 'mcp_echo', description: 'echoes' }]),
          onRequest: async (method: string, params: unknown) => {
            inFlight++;
            peak = Math.max(peak, inFlight);
            try {
              await sleep(100);
              if (method === 'list_tools') {
                return [
                  {
                    tool: 'say',
                    alias: 'say',
                    description: 'says',
                    params: [{ name: 'text', type: 'string', required: true, identifier: true }],
                  },
                ];
              }
              if (method === 'call_tool') return { value: (params as { arguments: { text: string } }).arguments.text };
              return { method, params };
            } finally {
              inFlight--;
            }
          },
        },
      );
      // No top-level await here: asyncio.run() needs a thread with no running loop.
      const result = await sandbox.execute(
        [
          'import asyncio, sandbox_host',
          'from concurrent.futures import ThreadPoolExecutor',
          'async def many(prefix, n):',
          '    return await asyncio.gather(*[mcp_echo.say(text=f"{prefix}{i}") for i in range(n)])',
          'own_loop = asyncio.run(many("run", 5))',
          'def sync_call(i):',
          '    return sandbox_host.request_sync("ping", {"i": i})["params"]["i"]',
          'def loop_in_thread(i):',
          '    return asyncio.run(call_tool("echo", "say", {"text": f"thread{i}"}))',
          'with ThreadPoolExecutor(8) as pool:',
          '    synced = list(pool.map(sync_call, range(8)))',
          '    threaded = list(pool.map(loop_in_thread, range(8)))',
          '(own_loop, synced, threaded)',
        ].join('\n'),
        { timeoutMs: 60_000 },
      );
      assert.equal(result.status, 'ok', JSON.stringify(result.error));
      const names = (prefix: string, n: number) => `[${Array.from({ length: n }, (_, i) => `'${prefix}${i}'`).join(', ')}]`;
      assert.equal(result.value, `(${names('run', 5)}, [0, 1, 2, 3, 4, 5, 6, 7], ${names('thread', 8)})`);
      // Top-level await on the kernel's loop, with worker threads running loops of their own meanwhile.
      const mixed = await sandbox.execute(
        ['workers = [asyncio.to_thread(loop_in_thread, i) for i in range(4)]', 'await asyncio.gather(many("top", 3), *workers)'].join('\n'),
        { timeoutMs: 60_000 },
      );
      assert.equal(mixed.value, `[${names('top', 3)}, ${names('thread', 4).slice(1, -1)}]`, JSON.stringify(mixed.error));
      assert.ok(peak >= 4, `requests did not overlap (at most ${peak} at once)`);
      // A restarted interpreter gets the prelude again.
      const reset = await sandbox.execute('(type(mcp_echo).__name__, "own_loop" in globals())', { reset: true });
      assert.equal(reset.value, "('_ServerProxy', False)", JSON.stringify(reset.error));
    });

    test('a run on a container that has already exited finishes as a lost session', async () => {
      const config = testSandbox(runtime);
      const container = await KernelContainer.start({ name: runtime, command: runtime }, config, 'gone');
      await container.kill('ended for the test');
      const run = runOnContainer({
        container,
        runId: 'late',
        session: 'gone',
        config,
        options: { timeoutMs: 60_000 },
        cold: false,
        started: performance.now(),
        code: '1',
      });
      const outcome = await Promise.race([run, sleep(5000).then(() => undefined)]);
      assert.ok(outcome, 'the run never finished');
      assert.equal(outcome.result.sessionLost, true);
      assert.equal(outcome.result.error?.type, 'SandboxExited');
    });

    test('requests in flight are capped per run', async () => {
      // The held requests are released once the code saw the ones over the cap refused (its
      // print), so the cap is hit however slowly the requests are sent.
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const sandbox = manager({}, { onRequest: async () => gate.then(() => 'done') });
      const result = await sandbox.execute(
        [
          'import asyncio, sandbox_host',
          `tasks = [asyncio.ensure_future(sandbox_host.request("wait")) for _ in range(${MAX_REQUESTS_IN_FLIGHT + 6})]`,
          'while sum(t.done() for t in tasks) < 6: await asyncio.sleep(0.01)',
          'print("refused", flush=True)',
          'results = await asyncio.gather(*tasks, return_exceptions=True)',
          '(sum(r == "done" for r in results), sorted({str(r) for r in results if not isinstance(r, str)}))',
        ].join('\n'),
        { onOutput: (_stream, text) => text.includes('refused') && release() },
      );
      assert.equal(result.value, `(${MAX_REQUESTS_IN_FLIGHT}, ['too many requests in flight (limit ${MAX_REQUESTS_IN_FLIGHT})'])`);
    });

    test('a prewarmed spare makes the first run of a new session warm, and is replaced', async () => {
      const sandbox = manager();
      await sandbox.prewarm();
      const first = await sandbox.execute('import os\n("kept" in globals(), os.getuid())', { session: 'w1' });
      assert.equal(first.coldStart, false);
      assert.equal(first.value, '(False, 65534)');
      await sandbox.prewarm();
      const second = await sandbox.execute('1', { session: 'w2' });
      assert.equal(second.coldStart, false, 'the spare was not replaced');
      assert.notEqual(sandbox.list().find((s) => s.name === 'w1')?.container, sandbox.list().find((s) => s.name === 'w2')?.container);
    });

    test('a session idle past idleSeconds is reaped with its container', async () => {
      const sandbox = manager({ idleSeconds: 1 });
      await sandbox.execute('x = 1', { session: 'idle' });
      const container = sandbox.list()[0]?.container;
      assert.ok(container);
      assert.ok(await waitFor(async () => sandbox.list().length === 0, 5000), 'session not reaped');
      assert.ok(await waitFor(async () => !(await exists(runtime, container)), 5000), 'container not removed');
    });

    test('the session cap evicts the least recently used idle session', async () => {
      const sandbox = manager({ maxSessions: 2 });
      await sandbox.execute('v = "a"', { session: 'a' });
      await sandbox.execute('v = "b"', { session: 'b' });
      await sandbox.execute('v', { session: 'a' });
      await sandbox.execute('v = "c"', { session: 'c' });
      assert.deepEqual(
        sandbox
          .list()
          .map((s) => s.name)
          .sort(),
        ['a', 'c'],
      );
      assert.equal((await sandbox.execute('v', { session: 'a' })).value, "'a'");
    });

    for (const [runs, cap] of [
      [8, 2],
      [16, 1],
    ] as const) {
      test(`${runs} concurrent first runs of new sessions with maxSessions ${cap}: never more than ${cap} containers`, async () => {
        const prefix = `cap${cap}x`;
        const sandbox = manager({ maxSessions: cap, prewarm: false });
        let peak = 0;
        let sampling = true;
        const sampler = (async () => {
          while (sampling) {
            peak = Math.max(peak, (await sessionContainers(runtime, prefix)).length);
            await sleep(100);
          }
        })();
        const results = await Promise.allSettled(
          Array.from({ length: runs }, (_, i) => sandbox.execute('import time\ntime.sleep(1.5)\n"done"', { session: `${prefix}${i}` })),
        );
        sampling = false;
        await sampler;
        const ok = results.filter((r) => r.status === 'fulfilled' && r.value.value === "'done'");
        const refused = results.filter((r) => r.status === 'rejected');
        assert.equal(ok.length, cap);
        assert.equal(refused.length, runs - cap);
        for (const r of refused) assert.match(String(r.reason), /All \d sandbox sessions are busy/);
        assert.ok(peak <= cap, `${peak} containers ran at once with maxSessions ${cap}`);
        assert.ok(sandbox.list().length <= cap);
        await sandbox.close();
        assert.ok(
          await waitFor(async () => (await sessionContainers(runtime, prefix)).length === 0, 10_000),
          'containers outlived close()',
        );
      });
    }

    test('closing the manager removes every container it started', async () => {
      const sandbox = manager();
      await Promise.all([sandbox.execute('1', { session: 'p' }), sandbox.execute('2', { session: 'q' })]);
      const names = sandbox.list().map((s) => s.container);
      await sandbox.close();
      for (const name of names) {
        // Docker's daemon removes an exited --rm container a moment after the CLI returns.
        assert.ok(await waitFor(async () => !(await exists(runtime, name!)), 5000), `${name} survived close()`);
      }
    });

    test('leftovers of a dead owner are removed on start; a live owner keeps its containers', async () => {
      const { hostname } = await import('node:os');
      const start = (owner: string) =>
        runCli(runtime, [
          'run',
          '-d',
          '--network',
          'none',
          '--label',
          `${LABEL}=1`,
          '--label',
          `${OWNER_LABEL}=${owner}`,
          '--entrypoint',
          'sleep',
          TEST_IMAGE,
          '300',
        ]);
      const dead = (await start(`${hostname()}/999999999`)).stdout.trim();
      const live = (await start(`${hostname()}/${process.ppid}`)).stdout.trim();
      try {
        const sandbox = manager();
        await sandbox.execute('1');
        const owned = async () => (await listOwnedContainers({ name: runtime, command: runtime })).map((c) => c.id);
        const remaining = await owned();
        assert.ok(await waitFor(async () => !(await owned()).some((id) => dead.startsWith(id)), 10_000), 'orphan kept');
        assert.ok(
          remaining.some((id) => live.startsWith(id)),
          'live owner container removed',
        );
      } finally {
        await runCli(runtime, removeArgs(runtime, [dead, live])).catch(() => undefined);
      }
    });

    test('no container outlives a bridge that is killed outright', async () => {
      const child = spawn(
        process.execPath,
        ['dist/cli.js', 'run', '--runtime', runtime, '--image', TEST_IMAGE, '-c', 'import time\nprint("up", flush=True)\ntime.sleep(120)'],
        { stdio: ['ignore', 'pipe', 'inherit'], env: process.env },
      );
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => d.toString().includes('up') && resolve());
        child.on('exit', (code) => reject(new Error(`cli exited early (${code})`)));
      });
      const owner = `${(await import('node:os')).hostname()}/${child.pid}`;
      const owned = async () =>
        (await runCli(runtime, ['ps', '-a', '--filter', `label=${OWNER_LABEL}=${owner}`, '--format', '{{.ID}}'])).stdout.trim();
      assert.notEqual(await owned(), '', 'the run should have a container');
      child.kill('SIGKILL');
      assert.ok(await waitFor(async () => (await owned()) === '', 15_000), 'container survived its owner');
    });

    test('a missing image gives a clear error', async () => {
      const sandbox = manager({ image: 'localhost/no-such-image:never' });
      await assert.rejects(sandbox.execute('1'), (error: unknown) => {
        assert.ok(error instanceof ImageMissingError);
        assert.match(error.message, /no-such-image:never" is not present in/);
        assert.match(error.message, /pull/);
        return true;
      });
    });
  });
}

test('a missing runtime gives a clear error', async () => {
  const sandbox = new SessionManager(testSandbox('podman'), {
    detect: { commands: { podman: '/nonexistent/podman', docker: '/nonexistent/docker' } },
  });
  await assert.rejects(sandbox.execute('1'), (error: unknown) => {
    assert.ok(error instanceof RuntimeUnavailableError);
    assert.match(error.message, /podman is not installed/);
    assert.match(error.message, /Install Podman/);
    return true;
  });
  await sandbox.close();
});

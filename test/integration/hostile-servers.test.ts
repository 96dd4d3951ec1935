// Proxied servers are untrusted: through the real bridge process, with a server that misbehaves
// on purpose (test/fixtures/hostile-server.ts, stdio and HTTP): cancellations only for calls in
// flight, results, arguments and tool lists over their caps, a notification flood, and entries
// or nested bridges that would start the bridge again.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { CATALOG_FILE } from '../../src/bridge/catalog/catalog.ts';
import { FIXTURE, startBridge, structured, tempDir, textOf, type BridgeHandle } from '../helpers/bridge.ts';
import { TEST_IMAGE, testRuntimes } from '../helpers/env.ts';
import { quietFor, sleep } from '../helpers/wait.ts';
import { fixtureProgram } from '../helpers/fixtures.ts';

const HOSTILE = fixtureProgram('hostile');
const BRIDGE = resolve('dist/cli.js');
const [runtime = 'podman'] = testRuntimes();
const sandbox = { runtime, image: TEST_IMAGE, memory: '256m', timeoutSeconds: 30, maxTimeoutSeconds: 60, prewarm: false };
const hostile = (...args: string[]) => ({ command: process.execPath, args: [HOSTILE, ...args] });

/** The hostile server over HTTP on loopback. */
async function startHostileHttp(...args: string[]): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [HOSTILE, '--http', '0', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolveUrl, reject) => {
    createInterface({ input: child.stdout }).once('line', (line) => resolveUrl(line.trim()));
    child.once('exit', (code) => reject(new Error(`hostile server exited (${code})`)));
  });
  return { url, child };
}

/** The JSON lines a hostile server recorded. */
async function records(file: string): Promise<Array<Record<string, unknown>>> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** A process's CPU time so far (user + system), in ms, and its peak resident memory, in MiB. */
async function processStats(pid: number): Promise<{ cpuMs: number; peakMiB: number }> {
  const stat = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  // Fields 14 and 15 (utime, stime) in clock ticks of 10 ms; here indexed from field 3.
  return { cpuMs: (Number(stat[11]) + Number(stat[12])) * 10, peakMiB: Number(/VmHWM:\s+(\d+)/.exec(status)![1]) / 1024 };
}

function value(result: Awaited<ReturnType<BridgeHandle['call']>>): string {
  assert.equal(structured(result).status, 'ok', textOf(result));
  return String(structured(result).value);
}

describe(`hostile proxied servers (${runtime})`, () => {
  let bridge: BridgeHandle;
  let web: Awaited<ReturnType<typeof startHostileHttp>>;
  let events: Awaited<ReturnType<typeof startHostileHttp>>;
  let calls: string;

  before(async () => {
    const dir = await tempDir('cem-hostile-');
    calls = join(dir, 'calls.jsonl');
    web = await startHostileHttp();
    events = await startHostileHttp('--events');
    bridge = await startBridge({
      sandbox,
      // Small list and argument caps keep the fixtures small; the result cap is the default.
      proxy: { maxToolsPerServer: 100, maxToolListBytes: 256 * 1024, maxToolSchemaBytes: 4096, maxArgumentBytes: 1024 * 1024 },
      servers: {
        calls: hostile('--record', calls),
        many: hostile('--tools', '300'),
        heavy: hostile('--tools', '90', '--tool-bytes', '3500'),
        fat: hostile('--fat-tools', '3', '--fat-bytes', '10000'),
        endless: hostile('--endless'),
        web: { url: web.url },
        events: { url: events.url },
      },
    });
  });
  after(async () => {
    await bridge?.close();
    web?.child.kill();
    events?.child.kill();
  });

  test('calls that completed are never cancelled at the end of the run; one in flight at a timeout is, once', async () => {
    const cancelled = async () => (await records(calls)).filter((r) => r.method === 'notifications/cancelled');
    const eight = await bridge.call(
      'import asyncio\nlen(await asyncio.gather(*[call_tool("calls", "sleep", {"ms": 50}) for _ in range(8)]))',
    );
    assert.equal(value(eight), '8');

    const timedOut = await bridge.call('await mcp_calls.sleep(ms=60000)', { timeout: 2 });
    assert.equal(structured(timedOut).status, 'timeout', textOf(timedOut));
    for (let i = 0; i < 50 && (await cancelled()).length === 0; i++) await sleep(100);
    assert.equal((await cancelled()).length, 1, 'the call in flight at the timeout is cancelled');
    // The server records what it receives in order: a cancel of the eight, sent when their run
    // ended, would come before the next run's call.
    const seen = await records(calls);
    const lastCall = seen.findLastIndex((r) => r.method === 'tools/call' && r.name === 'sleep');
    assert.ok(seen.findIndex((r) => r.method === 'notifications/cancelled') > lastCall, 'completed calls got notifications/cancelled');

    assert.equal(value(await bridge.call('await mcp_calls.echo(message="after")')), "'after'");
    // Likewise, anything cancelled at the end of that run would be recorded before the next call.
    assert.equal(value(await bridge.call('await mcp_calls.echo(message="barrier")')), "'barrier'");
    assert.equal((await records(calls)).filter((r) => r.method === 'tools/call' && r.name === 'echo').length, 2);
    assert.equal((await cancelled()).length, 1, 'nothing else was cancelled');
  });

  test('a stdio result over proxy.maxResultBytes fails its call with the cap named; the server is started again', async () => {
    const result = await bridge.call(
      [
        'try:',
        '    await mcp_calls.huge(mb=300)',
        '    outcome = "no error"',
        'except ToolError as e:',
        '    outcome = (e.kind, str(e))',
        '(outcome, await mcp_calls.echo(message="back"))',
      ].join('\n'),
    );
    assert.match(
      value(result),
      /^\(\('too-large', 'calls\.huge: server "calls" failed calling huge: it sent a message of more than 10 MiB \(proxy\.maxResultBytes\), so the bridge closed its connection; it is started again on next use'\), 'back'\)$/,
    );
  });

  test('eight concurrent 300 MB results over HTTP are each refused, and the bridge stays small', async () => {
    // The stdio server records its parent: the bridge.
    assert.equal(value(await bridge.call('await mcp_calls.echo(message="up")')), "'up'");
    const bridgePid = Number((await records(calls)).find((r) => r.ppid)!.ppid);
    const result = await bridge.call(
      [
        'import asyncio',
        'out = await asyncio.gather(*[mcp_web.huge(mb=300) for _ in range(8)], return_exceptions=True)',
        'kinds = sorted({e.kind if isinstance(e, ToolError) else type(e).__name__ for e in out})',
        'try:',
        '    await mcp_events.huge(mb=300)',
        '    streamed = "no error"',
        'except ToolError as e:',
        '    streamed = e.kind',
        '(kinds, "proxy.maxResultBytes" in str(out[0]), streamed, await mcp_web.echo(message="still here"), len(await mcp_events.huge(mb=1)))',
      ].join('\n'),
    );
    assert.equal(value(result), "(['too-large'], True, 'too-large', 'still here', 1048576)");
    const { peakMiB } = await processStats(bridgePid);
    // Read whole, the eight results would be 2.4 GB; the cap holds each at 10 MiB.
    assert.ok(peakMiB < 700, `the bridge peaked at ${Math.round(peakMiB)} MiB`);
  });

  test('tool arguments over proxy.maxArgumentBytes are refused before they are sent', async () => {
    const result = await bridge.call(
      [
        'under = await mcp_calls.size(message="x" * (1024 * 1024 - 100))',
        'try:',
        '    await mcp_calls.size(message="x" * (1024 * 1024))',
        '    over = "sent"',
        'except ToolError as e:',
        '    over = (e.kind, str(e))',
        '(under, over)',
      ].join('\n'),
    );
    assert.equal(
      value(result),
      "('1048476', ('too-large', 'calls.size: the arguments are 1.0 MiB as JSON, over the 1 MiB a call may send (proxy.maxArgumentBytes)'))",
    );
  });

  test('tool lists are capped per server (count, bytes, per tool, pages) and the cut is said', async () => {
    const result = await bridge.call(
      [
        'for s in ["many", "heavy", "fat", "endless"]:',
        '    await query_tool_docs(s)',
        '{s["name"]: (s["tools"], s.get("warning", "")) for s in discovered_servers() if s["name"] in ("many", "heavy", "fat", "endless")}',
      ].join('\n'),
    );
    const text = value(result);
    assert.match(text, /'many': \(100, 'it lists more than 100 tools; the first 100 are kept \(proxy\.maxToolsPerServer\)'\)/);
    const heavy = /'heavy': \((\d+), 'its tool list is over 256 KiB; the first \1 tools are kept \(proxy\.maxToolListBytes\)'\)/.exec(text);
    assert.ok(heavy && Number(heavy[1]) < 94 && Number(heavy[1]) > 60, text);
    assert.match(text, /'fat': \(4, '3 tools were left out for being over 4 KiB each \(proxy\.maxToolSchemaBytes\)'\)/);
    assert.match(text, /'endless': \(53, 'its tool list goes on past 50 pages; the rest is not read'\)/);
    // For people: the log names what was left out; the Tools view's file keeps the warning.
    assert.match(bridge.stderr(), /server fat: tool list cut: .*\(left out for size: fat0, fat1, fat2\)/);
    let catalog = '';
    for (let i = 0; i < 40 && !catalog.includes('proxy.maxToolSchemaBytes'); i++) {
      await sleep(50);
      catalog = await readFile(join(bridge.stateDir, CATALOG_FILE), 'utf8');
    }
    assert.match(catalog, /"warning":"3 tools were left out for being over 4 KiB each \(proxy\.maxToolSchemaBytes\)"/);
    // The page cap too: said in the log and kept as the server's warning for the Tools view.
    assert.match(bridge.stderr(), /server endless: tool list cut: its tool list goes on past 50 pages; the rest is not read/);
    for (let i = 0; i < 40 && !catalog.includes('goes on past 50 pages'); i++) {
      await sleep(50);
      catalog = await readFile(join(bridge.stateDir, CATALOG_FILE), 'utf8');
    }
    assert.match(catalog, /"warning":"its tool list goes on past 50 pages; the rest is not read"/);
  });
});

describe(`a server that floods notifications (${runtime})`, () => {
  let bridge: BridgeHandle;
  let record: string;

  before(async () => {
    record = join(await tempDir('cem-flood-'), 'flood.jsonl');
    bridge = await startBridge({
      sandbox,
      servers: { flood: hostile('--flood', '--record', record), healthy: { command: process.execPath, args: [FIXTURE] } },
    });
  });
  after(async () => {
    await bridge?.close();
  });

  test('is rate-limited: the bridge keeps answering and does not spin; relisting is bounded', async () => {
    // The flood starts once the bridge has started the server.
    assert.equal(value(await bridge.call('await mcp_flood.echo(message="through")')), "'through'");
    const bridgePid = Number((await records(record)).find((r) => r.ppid)!.ppid);
    const before = await processStats(bridgePid);
    const started = Date.now();
    for (let i = 0; i < 4; i++) {
      const t = Date.now();
      const result = await bridge.call('import asyncio\n(await mcp_healthy.echo(message="ok"), await mcp_flood.echo(message="ok"), 1 + 1)');
      assert.equal(value(result), "('ok', 'ok', 2)");
      assert.ok(Date.now() - t < 15_000, `a run took ${Date.now() - t} ms during the flood`);
    }
    const elapsed = Date.now() - started;
    const cpu = (await processStats(bridgePid)).cpuMs - before.cpuMs;
    // Unchecked, parsing the flood takes a whole core; with the cap it is a few per cent.
    assert.ok(cpu < elapsed * 0.5, `the bridge used ${cpu} ms of CPU in ${elapsed} ms`);
    const lists = (await records(record)).filter((r) => r.method === 'tools/list' && Number(r.at) >= started).length;
    assert.ok(lists <= elapsed / 2000 + 2, `${lists} relistings in ${elapsed} ms`);
    assert.match(bridge.stderr(), /server flood: sends more than 100 notifications a second; \d+ dropped so far/);
  });
});

describe(`entries and nested bridges that would start the bridge again (${runtime})`, () => {
  let bridge: BridgeHandle;
  let dir: string;
  let starts: string;
  let innerState: string;

  before(async () => {
    dir = await tempDir('cem-self-');
    starts = join(dir, 'starts.txt');
    innerState = join(dir, 'inner-state');
    await mkdir(join(dir, 'bin'));
    await symlink(BRIDGE, join(dir, 'bin', 'tool.js'));
    // A wrapper nothing can recognise as the bridge: only the environment marker stops it.
    const wrapper = join(dir, 'wrapper.sh');
    await writeFile(
      wrapper,
      `#!/bin/sh\necho started >> "${starts}"\nexec "${process.execPath}" "${BRIDGE}" --config "${join(dir, 'inner.json')}"\n`,
    );
    await chmod(wrapper, 0o755);
    await writeFile(
      join(dir, 'inner.json'),
      JSON.stringify({
        stateDir: innerState,
        sandbox,
        servers: { again: { command: 'sh', args: [wrapper] }, inner: { command: process.execPath, args: [FIXTURE] } },
      }),
    );
    const bridgeDir = resolve('dist');
    bridge = await startBridge({
      sandbox,
      servers: {
        dotted: { command: process.execPath, args: [`${bridgeDir}/./cli.js`] },
        relative: { command: process.execPath, args: ['./dist/../dist/cli.js'], cwd: resolve('.') },
        linked: { command: process.execPath, args: [join(dir, 'bin', 'tool.js')] },
        shell: { command: 'sh', args: ['-c', `exec node "${bridgeDir}/cli.js" --config x.json`] },
        npx: { command: 'npx', args: ['--yes', 'code-execution-mode@latest'] },
        nested: { command: 'sh', args: [wrapper] },
      },
    });
  });
  after(async () => {
    await bridge?.close();
  });

  test('by real path, through a symlink, inside a shell command line and by name', async () => {
    const result = await bridge.call('{s["name"]: s.get("error", "") for s in discovered_servers() if s["name"] != "nested"}');
    const errors = value(result);
    for (const name of ['dotted', 'relative', 'linked', 'shell', 'npx']) {
      assert.match(
        errors,
        new RegExp(`'${name}': 'server "${name}" would start this bridge again and is not proxied \\(set allowSelfProxy to override\\)'`),
      );
    }
  });

  test('a bridge started by a proxied server (the environment marker) starts no stdio servers', async () => {
    const result = await bridge.call('docs = await query_tool_docs("nested")\n[d["tool"] for d in docs]');
    assert.equal(value(result), "['run_python']");
    let catalog = '';
    for (let i = 0; i < 60 && !/"inner":\{[^}]*"state":"error"/.test(catalog); i++) {
      await sleep(100);
      catalog = await readFile(join(innerState, CATALOG_FILE), 'utf8').catch(() => '');
    }
    for (const name of ['again', 'inner']) {
      assert.match(
        catalog,
        new RegExp(
          `"${name}":\\{[^}]*"state":"error","error":"server \\\\"${name}\\\\" is not started: this bridge was started by a proxied server of another Code Execution Mode bridge \\(CODE_EXECUTION_MODE_DEPTH=1\\)`,
        ),
      );
    }
    // A start would be the nested bridge's own doing, after its catalog said why not: nothing
    // later can be awaited, so a short quiet spell shows it.
    await quietFor(500);
    assert.equal((await readFile(starts, 'utf8')).trim().split('\n').length, 1, 'the nested bridge started no further bridge');
  });
});

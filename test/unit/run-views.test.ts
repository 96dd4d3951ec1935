// The wording and bounds of the run views without VS Code: snippet provenance in the run log
// (used and saved, arguments shortened, under concurrency), the Runs view's rows with live
// elapsed time, the run panel's title, call times and folded output and hidden base64, the Tools view's Python calls
// with the sandbox's aliases and its server states, and the walkthrough's steps.
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { ProxyHub } from '../../src/bridge/proxy/hub.ts';
import { createHostMethods } from '../../src/bridge/sandbox-api/host-methods.ts';
import { parseRunLog, type RunRecord } from '../../src/state/run-log/reader.ts';
import { MAX_SNIPPET_ARGUMENT_CHARS, RunLog } from '../../src/state/run-log/writer.ts';
import { parseDocstring, SnippetStore, snippetDirs, snippetHash, snippetSourceFromRun } from '../../src/state/snippets.ts';
import type { SandboxReport } from '../../src/sandbox/engines/detect.ts';
import { HEAD_LINES, outputBlock, streamsJson, TAIL_LINES, withoutBase64 } from '../../src/extension/panels/run-panel-text.ts';
import {
  callConfirmations,
  callTime,
  codeLine,
  runEndLine,
  runFacts,
  runLabel,
  runState,
  waitsForUser,
  runTabTitle,
  runWaitedText,
} from '../../src/extension/views/run-text.ts';
import { formatDuration } from '../../src/shared/durations.ts';
import { plural } from '../../src/shared/plural.ts';
import { pythonCall, serverAliases, toolAliases } from '../../src/extension/views/tool-call-text.ts';
import { errorClause, serverStateText } from '../../src/extension/views/tool-summary.ts';
import { sandboxSteps, WALKTHROUGH_KEYS } from '../../src/extension/walkthrough-steps.ts';
import { requestContext } from '../helpers/request-context.ts';

const GREET = '"""Greets someone."""\n\n\ndef main(name):\n    return "Hello, " + name\n';

const context = requestContext;

async function snippetSetup(t: { after(fn: () => void): void }) {
  const dir = await mkdtemp(join(tmpdir(), 'cem-provenance-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  await mkdir(join(dir, 'snippets'));
  await writeFile(join(dir, 'snippets', 'greet.py'), GREET);
  const workspace = join(dir, 'ws');
  await mkdir(workspace);
  await writeFile(join(workspace, 'team.py'), '"""Team snippet."""\ndef main():\n    return 1\n');
  const runLog = new RunLog(dir);
  const methods = createHostMethods({} as ProxyHub, runLog, new SnippetStore(snippetDirs(dir, workspace)));
  return { dir, runLog, methods, runs: () => parseRunLog(readFileSync(join(dir, 'runs.jsonl'), 'utf8')) };
}

test('run_snippet is logged with its name, folder, source hash and shortened arguments', async (t) => {
  const { runLog, methods, runs } = await snippetSetup(t);
  runLog.runStarted({ run: 'r1', session: 'default', code: 'await run_snippet("greet", "Ada")', timeoutMs: 1000 });
  await methods.handle('get_snippet', { name: 'greet', arguments: "'Ada'" }, context('r1'));
  await methods.handle('get_snippet', { name: 'team' }, context('r1'));
  // The limit: a long argument text is cut in the log.
  await methods.handle('get_snippet', { name: 'greet', arguments: 'x'.repeat(3000) }, context('r1'));
  const run = runs().find((r) => r.id === 'r1')!;
  assert.equal(run.snippets.length, 3);
  assert.deepEqual(
    { ...run.snippets[0], time: '' },
    { time: '', name: 'greet', origin: 'user', sha256: snippetHash(GREET), arguments: "'Ada'" },
  );
  assert.equal(run.snippets[1]!.origin, 'workspace');
  assert.equal(run.snippets[1]!.arguments, undefined);
  const long = run.snippets[2]!.arguments!;
  assert.ok(
    long.startsWith('x'.repeat(MAX_SNIPPET_ARGUMENT_CHARS)) && long.length < MAX_SNIPPET_ARGUMENT_CHARS + 60,
    `${long.length} characters logged`,
  );
  assert.match(long, /2700 characters not logged/);
});

test('the arguments the sandbox sends for the log are bounded: a longer text is refused, not logged', async (t) => {
  const { runLog, methods, runs } = await snippetSetup(t);
  runLog.runStarted({ run: 'r2', session: 'default', code: 'x', timeoutMs: 1000 });
  await assert.rejects(methods.handle('get_snippet', { name: 'greet', arguments: 'y'.repeat(4001) }, context('r2')));
  await assert.rejects(methods.handle('get_snippet', { name: 'greet', arguments: 42 }, context('r2')));
  assert.equal(runs().find((r) => r.id === 'r2')!.snippets.length, 0);
});

test('concurrent run_snippet calls of several runs each get one whole, parseable line', async (t) => {
  const { runLog, methods, runs, dir } = await snippetSetup(t);
  for (const id of ['a', 'b', 'c']) runLog.runStarted({ run: id, session: id, code: id, timeoutMs: 1000 });
  await Promise.all(
    Array.from({ length: 60 }, (_, i) =>
      methods.handle(
        'get_snippet',
        { name: i % 2 ? 'greet' : 'team', arguments: `${i}:${'z'.repeat(1000)}` },
        context(['a', 'b', 'c'][i % 3]!),
      ),
    ),
  );
  const lines = readFileSync(join(dir, 'runs.jsonl'), 'utf8').trim().split('\n');
  assert.equal(lines.length, 63);
  for (const line of lines) JSON.parse(line);
  const byRun = Object.fromEntries(runs().map((r) => [r.id, r.snippets.length]));
  assert.deepEqual(byRun, { a: 20, b: 20, c: 20 });
  for (const run of runs()) for (const use of run.snippets) assert.ok(use.arguments!.length < MAX_SNIPPET_ARGUMENT_CHARS + 60);
});

test('a snippet saved from a run names the run in a comment and in the log; the docstring stays first', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-saved-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const source = snippetSourceFromRun('Counts things.', 'len([1, 2])', [], {
    run: 'run-1\n"""evil',
    session: 'default\nimport os',
    started: '2026-01-01T00:00:00.000Z',
  });
  assert.equal(parseDocstring(source), 'Counts things.');
  const comment = source.split('\n').find((l) => l.startsWith('# Saved from sandbox run'));
  assert.ok(comment, source);
  assert.equal(
    source.split('\n').filter((l) => l.includes('evil') || l.includes('import os')).length,
    1,
    'the values stay on the comment line',
  );
  assert.match(comment, /run run-1__+evil \(session default_import_os, started 2026-01-01T00:00:00.000Z\)/);
  const runLog = new RunLog(dir);
  runLog.runStarted({ run: 'r9', session: 'default', code: 'len([1, 2])', timeoutMs: 1000 });
  runLog.snippetSaved({ run: 'r9', name: 'count', sha256: snippetHash(source) });
  // A save for a run whose start left the log makes no run of its own.
  runLog.snippetSaved({ run: 'gone', name: 'count', sha256: 'ab' });
  const runs = parseRunLog(readFileSync(join(dir, 'runs.jsonl'), 'utf8'));
  assert.deepEqual(
    runs.map((r) => r.id),
    ['r9'],
  );
  assert.deepEqual(
    runs[0]!.savedAsSnippets.map((s) => s.name),
    ['count'],
  );
});

test('the reader drops snippet events with names or hashes that the bridge never writes', () => {
  const lines = [
    { type: 'run-start', run: 'r', session: 's', time: '2026-01-01T00:00:00.000Z', code: 'x' },
    { type: 'snippet', run: 'r', time: '2026-01-01T00:00:01.000Z', name: '**bold**](command:x)', origin: 'user', sha256: 'ab' },
    { type: 'snippet', run: 'r', time: '2026-01-01T00:00:01.000Z', name: 'ok_name', origin: 'user', sha256: 'not hex' },
    { type: 'snippet', run: 'r', time: '2026-01-01T00:00:01.000Z', name: 'ok_name', origin: 'elsewhere', sha256: 'ab' },
    { type: 'snippet', run: 'r', time: '2026-01-01T00:00:01.000Z', name: 'ok_name', origin: 'user', sha256: 'ab12' },
  ];
  const [run] = parseRunLog(lines.map((l) => JSON.stringify(l)).join('\n'));
  assert.deepEqual(
    run!.snippets.map((s) => s.name),
    ['ok_name'],
  );
});

function record(overrides: Partial<RunRecord>): RunRecord {
  return {
    id: 'r',
    session: 'default',
    started: new Date(0).toISOString(),
    code: 'print(1)',
    stdout: '',
    stderr: '',
    value: null,
    error: null,
    images: [],
    toolCalls: [],
    toolCallCount: 0,
    truncated: false,
    sessionLost: false,
    confirmations: [],
    snippets: [],
    savedAsSnippets: [],
    relays: [],
    egress: [],
    networkQuestions: [],
    ...overrides,
  };
}

test("a Runs view row is labelled by the code's first meaningful line: no blank, comment or bare import line first", () => {
  assert.equal(runLabel(record({ code: 'print(1)' })), 'print(1)');
  assert.equal(codeLine('\n\n# sum the graph\n   total = sum(x)  \nprint(total)'), 'total = sum(x)');
  assert.equal(codeLine('import os\nfrom pathlib import Path\nimport json as j, re\n\nos.listdir("/work")'), 'os.listdir("/work")');
  // Imports alone: the first of them; comments alone: the first comment.
  assert.equal(codeLine('import numpy as np\nimport pandas'), 'import numpy as np');
  assert.equal(codeLine('# nothing yet\n# really'), '# nothing yet');
  // An import that does more than import is the line.
  assert.equal(codeLine('import os; print(os.getcwd())\nx = 1'), 'import os; print(os.getcwd())');
  assert.equal(codeLine('  \n'), '(empty)');
  const long = codeLine(`result = await mcp_memory.create_entities(entities=[${'{"name": "Ada"}, '.repeat(10)}])`);
  assert.equal(long.length, 60);
  assert.ok(long.startsWith('result = await mcp_memory.create_entities(') && long.endsWith('...'), long);
  assert.equal(codeLine('x = 1', 60), 'x = 1');
});

test('a Runs view row describes state, duration and session; a running one shows its elapsed time', () => {
  assert.equal(formatDuration(420.4), '420 ms');
  assert.equal(formatDuration(1234), '1.2 s');
  assert.equal(formatDuration(12_345), '12 s');
  assert.equal(formatDuration(125_000), '2 min 5 s');
  assert.equal(formatDuration(undefined), '');
  assert.equal(runFacts(record({ status: 'ok', durationMs: 1234 })), 'ok · 1.2 s · default');
  const started = Date.parse('2026-01-01T00:00:00.000Z');
  const running = record({ started: new Date(started).toISOString(), timeoutMs: 60_000 });
  assert.equal(runFacts(running, started + 3_400), 'running · 3.4 s · default');
  assert.equal(runFacts(running, started + 15_000), 'running · 15 s · default');
  const waiting = record({ ...running, confirmations: [{ asked: running.started, server: 'fs', tool: 'write_file', arguments: {} }] });
  assert.equal(runState(waiting, started + 1000), 'waiting for confirmation');
  assert.equal(runFacts(waiting, started + 2000), 'waiting for confirmation · 2.0 s · default');
  // A network question waiting: the host and port it asks about; answered, the run is running again.
  const asked = { time: running.started, asked: running.started, host: 'api.example.com', port: 443 };
  const networkWait = record({ ...running, networkQuestions: [asked] });
  assert.equal(runFacts(networkWait, started + 2000), 'waiting for you: network access to api.example.com:443 · 2.0 s · default');
  assert.ok(waitsForUser(runState(networkWait, started + 1000)) && waitsForUser(runState(waiting, started + 1000)));
  const two = record({ ...running, networkQuestions: [asked, { ...asked, host: '::1', port: 8080 }] });
  assert.equal(runState(two, started + 1000), 'waiting for you: network access to api.example.com:443 (+1 more)');
  const unseen = record({ ...running, networkQuestions: [{ ...asked, host: `a\u202e${'x'.repeat(80)}.example` }] });
  assert.match(runState(unseen, started + 1000), /^waiting for you: network access to a\\u\{202E\}x+…$/);
  const answered = record({ ...running, networkQuestions: [{ ...asked, answer: 'once', waitedMs: 800 }] });
  assert.equal(runState(answered, started + 1000), 'running');
  assert.equal(waitsForUser('running'), false);
  assert.equal(runState(record({ ...networkWait, status: 'ok', durationMs: 5 })), 'ok');
  // Past its limit and a minute: lost, no clock.
  assert.equal(runFacts(running, started + 10 * 60_000), 'lost · default');
});

test("a run panel's tab is titled by the code's first line, short, and the time the run started", () => {
  const started = new Date(2026, 0, 2, 14, 2, 31).toISOString();
  assert.equal(runTabTitle(record({ code: '# say it\nprint(1)', started })), 'print(1) · 14:02:31');
  const long = runTabTitle(record({ code: 'graph = await mcp_memory.read_graph(include_everything=True)', started }));
  assert.equal(long, 'graph = await mcp_memory.read... · 14:02:31');
  assert.equal(runTabTitle(record({ code: 'x', started: 'not a time' })), 'x');
});

test("a confirmed call's time is its own, with the user's wait shown apart", () => {
  const t = (ms: number) => new Date(Date.parse('2026-01-01T00:00:00.000Z') + ms).toISOString();
  const call = (server: string, tool: string, end: number, durationMs: number) => ({
    time: t(end),
    server,
    tool,
    arguments: {},
    outcome: 'ok',
    durationMs,
  });
  const run = record({
    toolCalls: [call('fs', 'read', 100, 20), call('fs', 'write', 7000, 6900), call('fs', 'write', 9000, 150)],
    confirmations: [
      { asked: t(150), answered: t(6950), server: 'fs', tool: 'write', arguments: {}, answer: 'allowed-once', waitedMs: 6800 },
      // Asked before the third call began: not its wait (an answer for another call).
      { asked: t(8000), answered: t(8100), server: 'fs', tool: 'write', arguments: {}, answer: 'declined', waitedMs: 100 },
    ],
  });
  const confirmed = callConfirmations(run);
  assert.deepEqual([...confirmed.keys()], [1]);
  assert.equal(callTime(run.toolCalls[0]!, confirmed.get(0)), '20 ms');
  assert.equal(callTime(run.toolCalls[1]!, confirmed.get(1)), '100 ms (+6.8 s waiting for you)');
  // A wait longer than the logged call (clock reads apart) leaves no negative time.
  assert.equal(callTime({ durationMs: 50 }, { waitedMs: 80 }), '0 ms (+50 ms waiting for you)');
  assert.equal(runWaitedText(run), ', 6.9 s of it waiting for you');
  assert.equal(runWaitedText(record({})), '');
});

test('the output channel says "1 tool call" and "2 tool calls", and a failed run its duration', () => {
  assert.equal(plural(1, 'tool call'), '1 tool call');
  assert.equal(plural(0, 'tool call'), '0 tool calls');
  assert.equal(
    runEndLine(record({ status: 'ok', durationMs: 5, toolCallCount: 1 })),
    'run ok in 5 ms (session default, 1 tool call): print(1)',
  );
  assert.equal(
    runEndLine(record({ status: 'error', durationMs: 2500, toolCallCount: 2 })),
    'run error in 2.5 s (session default, 2 tool calls): print(1)',
  );
  assert.equal(runEndLine(record({ status: 'error' })), 'run error (session default, 0 tool calls): print(1)');
});

test('long output is folded to a bounded head and tail; short output is whole; markup is escaped', () => {
  const lines = Array.from({ length: 100_000 }, (_, i) => `line ${i} <b>`);
  const html = outputBlock('stdout', lines.join('\n'));
  const shown = html.split('\n').length;
  assert.ok(shown <= HEAD_LINES + TAIL_LINES + 2, `${shown} lines in the page`);
  assert.ok(html.includes(`${100_000 - HEAD_LINES - TAIL_LINES} lines hidden`));
  assert.ok(html.includes('line 99999') && html.includes('line 0 ') && !html.includes('line 5000 '));
  assert.ok(!html.includes('<b>') && html.includes('&lt;b&gt;'));
  assert.ok(html.includes('Open in Editor') && html.includes('Show more'));
  const short = outputBlock('stderr', 'a\nb', 'stderr');
  assert.ok(short.includes('>a\nb</pre>') && !short.includes('hidden'));
  const data = streamsJson({ stdout: '</script><script>alert(1)</script>\u2028' });
  assert.ok(!data.includes('</script') && !data.includes('\u2028'));
  assert.deepEqual(JSON.parse(data), { stdout: '</script><script>alert(1)</script>\u2028' });
});

test('base64 in output is shown as a placeholder, never as text', () => {
  const png = `iVBORw0KGgo${'AAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk'.repeat(8)}`;
  const text = withoutBase64(`before ${png.slice(0, png.length - (png.length % 4))} after`);
  assert.match(text, /^before <image\/png image, \d+ bytes: base64 not shown> after$/);
  const data = Buffer.from(Array.from({ length: 600 }, (_, i) => (i * 7919) % 256)).toString('base64');
  assert.match(withoutBase64(data), /^<base64 data, \d+ bytes: not shown>$/);
  assert.equal(withoutBase64('plain words stay'), 'plain words stay');
});

test('the Tools view shows the Python call with the aliases the sandbox uses', () => {
  const servers = serverAliases(['everything', 'my-fs', 'my_fs']);
  assert.deepEqual([...servers.values()], ['everything', 'my_fs', 'my_fs_2']);
  const tools = toolAliases(['get-sum', 'class', 'printEnv']);
  assert.equal(
    pythonCall('everything', tools.get('get-sum')!, { type: 'object', properties: { a: {}, b: {} }, required: ['a', 'b'] }),
    'await mcp_everything.get_sum(a=..., b=...)',
  );
  assert.equal(pythonCall('everything', tools.get('class')!), 'await mcp_everything.class_()');
  assert.equal(
    pythonCall('everything', tools.get('printEnv')!, { required: ['not-a-name', 7, 'ok'] }),
    'await mcp_everything.printenv(ok=...)',
  );
});

test("the Tools view says a server's state in words and its error's first clause", () => {
  assert.equal(serverStateText('not-started', false), 'not started');
  assert.equal(serverStateText('not-started', true), 'idle');
  assert.equal(serverStateText('running', true), 'running');
  assert.equal(serverStateText('awaiting-consent', false), 'awaiting consent');
  assert.equal(
    errorClause('server "broken" failed to start: spawn /nope ENOENT (it exited with code 1); its stderr ended with: boom', 'broken'),
    'failed to start',
  );
  assert.equal(errorClause('server "broken" could not start: the command "nope" was not found', 'broken'), 'could not start');
  assert.equal(
    errorClause('server "slow" did not finish starting within 6 s (proxy.connectTimeoutSeconds)', 'slow'),
    'did not finish starting within 6 s',
  );
  // Another server's name is not taken off; a message of one clause is whole, a long one clipped.
  assert.equal(errorClause('server "other" is gone', 'broken'), 'server "other" is gone');
  assert.equal(errorClause('x'.repeat(100), 'broken').length, 48);
  assert.equal(errorClause('', 'broken'), 'failed');
});

test('walkthrough steps: the runtime and the image are done from the sandbox report', () => {
  const report = (state: string, image: boolean | null): SandboxReport =>
    ({
      image: 'x',
      runtimes: [{ name: 'podman', command: 'podman', state, problems: [], fixes: [], checks: [{ name: 'image', ok: image, detail: '' }] }],
    }) as unknown as SandboxReport;
  assert.deepEqual(sandboxSteps(report('ready', true)), { runtimeReady: true, imagePresent: true });
  assert.deepEqual(sandboxSteps(report('image-missing', false)), { runtimeReady: true, imagePresent: false });
  assert.deepEqual(sandboxSteps(report('daemon-down', null)), { runtimeReady: false, imagePresent: false });
  assert.deepEqual(sandboxSteps({ image: 'x', runtimes: [] }), { runtimeReady: false, imagePresent: false });
});

test('every contributed setting has a description, and every walkthrough step a context key that completes it', () => {
  const manifest = JSON.parse(readFileSync('package.json', 'utf8')) as {
    contributes: {
      configuration: { properties: Record<string, { description?: string; markdownDescription?: string }> };
      walkthroughs: Array<{ steps: Array<{ id: string; completionEvents?: string[] }> }>;
    };
  };
  const missing = Object.entries(manifest.contributes.configuration.properties)
    .filter(([, p]) => !p.description?.trim() && !p.markdownDescription?.trim())
    .map(([k]) => k);
  assert.deepEqual(missing, []);
  const keys = new Set<string>(Object.values(WALKTHROUGH_KEYS));
  for (const step of manifest.contributes.walkthroughs[0]!.steps) {
    assert.ok(
      step.completionEvents?.some((e) => e.startsWith('onContext:') && keys.has(e.slice('onContext:'.length))),
      `step ${step.id}`,
    );
  }
});

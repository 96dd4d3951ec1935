// The extension's parts that need no VS Code: the state-dir watcher that survives its folder
// being deleted, finding run_python among VS Code's tools and reading its result, and the
// untrusted-workspace rule for every setting.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ensurePrivateDir } from '../../src/state/private-files.ts';
import { RUN_PYTHON_DESCRIPTION, runPythonDescription } from '../../src/bridge/tool/run-python.ts';
import { defaultSandboxConfig } from '../../src/config/schema.ts';
import { bridgeToolName, findCallRun, outcomeOfRun, REFUSED_TYPES, runOutcome } from '../../src/extension/bridge-tool.ts';
import { DirWatcher } from '../../src/extension/dir-watcher.ts';
import { RESTRICTED_SETTINGS, SANDBOX_SETTING_KEYS, settingValue } from '../../src/extension/settings/trusted-settings.ts';
import { until } from '../helpers/wait.ts';

test('the state-dir watcher survives its folder being deleted, replaced by a file, and made again', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'cem-watch-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const dir = join(root, 'state');
  const changes: Array<string | null> = [];
  const problems: Array<string | undefined> = [];
  const crashes: unknown[] = [];
  const onUncaught = (error: unknown) => crashes.push(error);
  process.on('uncaughtException', onUncaught);
  let attempts = 0;
  const prepare = (folder: string) => (attempts++, ensurePrivateDir(folder));
  const watcher = new DirWatcher(dir, (file) => changes.push(file), { prepare, onProblem: (p) => problems.push(p), checkMs: 50 });
  try {
    assert.ok(watcher.watching, 'the folder was made and watched');
    writeFileSync(join(dir, 'runs.jsonl'), '{}\n');
    await until('the first change', () => changes.includes('runs.jsonl'));

    // Deleted (as a person cleaning up does): the watcher makes it again and reports a change.
    rmSync(dir, { recursive: true });
    changes.length = 0;
    await until('a change after the folder came back', () => changes.includes(null));
    writeFileSync(join(dir, 'runs.jsonl'), '{}\n');
    await until('changes in the new folder', () => changes.includes('runs.jsonl'));

    // Deleted and made again by someone else (a bridge's next write) before a check: still followed.
    rmSync(dir, { recursive: true });
    mkdirSync(dir);
    changes.length = 0;
    await until('the replaced folder to be watched', () => changes.includes(null));
    writeFileSync(join(dir, 'catalog.json'), '{}');
    await until('changes in the replaced folder', () => changes.includes('catalog.json'));

    // Replaced by a file: unusable, said once; usable again once the file is gone.
    rmSync(dir, { recursive: true });
    writeFileSync(dir, 'not a folder');
    await until('the problem', () => problems.some((p) => p !== undefined));
    assert.match(
      problems.find((p) => p !== undefined)!,
      new RegExp(`cannot watch ${dir.replace(/[\\/.]/g, '\\$&')}`),
    );
    const tried = attempts;
    await until('two more retries', () => attempts >= tried + 2);
    assert.equal(problems.filter((p) => p !== undefined).length, 1, 'said once, not at every retry');
    rmSync(dir);
    await until('recovery', () => problems.at(-1) === undefined && watcher.watching);
    assert.deepEqual(crashes, []);
  } finally {
    watcher.dispose();
    process.off('uncaughtException', onUncaught);
  }
});

test("run_python of this extension's bridge is found among VS Code's tools by its name and description", () => {
  const tool = (name: string, description = 'x') => ({ name, description });
  assert.equal(
    bridgeToolName([tool('mcp_other_run_python'), tool('mcp_code_executio_run_python', RUN_PYTHON_DESCRIPTION)], 'Code Execution Mode'),
    'mcp_code_executio_run_python',
  );
  // A second server of the same label gets a numbered prefix.
  assert.equal(
    bridgeToolName([tool('mcp_code_executi2_run_python', RUN_PYTHON_DESCRIPTION)], 'Code Execution Mode'),
    'mcp_code_executi2_run_python',
  );
  // Another server's run_python is not ours, unless it is ours by its description.
  assert.equal(bridgeToolName([tool('mcp_python_tools_run_python')], 'Code Execution Mode'), undefined);
  assert.equal(bridgeToolName([tool('mcp_renamed_run_python', RUN_PYTHON_DESCRIPTION)], 'Code Execution Mode'), 'mcp_renamed_run_python');
  assert.equal(bridgeToolName([], 'Code Execution Mode'), undefined);
  // Whatever sandbox the listing names, and with packages or a workspace.
  for (const description of [
    runPythonDescription(defaultSandboxConfig({ backend: 'wasm' })),
    runPythonDescription(defaultSandboxConfig({ ociRuntime: 'runsc' }), { names: ['numpy'], more: 0 }),
    runPythonDescription(defaultSandboxConfig({}), { names: ['scipy', 'numpy', 'matplotlib'], more: 30 }),
    runPythonDescription(defaultSandboxConfig({ workspace: { path: '/tmp', access: 'read-only' } })),
  ]) {
    assert.equal(
      bridgeToolName([tool('mcp_renamed_run_python', description)], 'Code Execution Mode'),
      'mcp_renamed_run_python',
      description,
    );
  }
  assert.equal(bridgeToolName([tool('mcp_renamed_run_python', 'Python 3 interpreter on your machine')], 'Code Execution Mode'), undefined);
});

test("a run_python result as VS Code hands it back: the structured content's JSON, or plain text", () => {
  const ran = runOutcome(JSON.stringify({ status: 'ok', value: '42', durationMs: 12, auditLog: 'the audit log is not being written' }));
  assert.deepEqual([ran.status, ran.durationMs, ran.auditLog], ['ok', 12, 'the audit log is not being written']);
  const failed = runOutcome(
    JSON.stringify({ status: 'error', error: { type: 'ImageMissingError', message: 'The sandbox image "x" is not present in podman' } }),
  );
  assert.equal(failed.durationMs, undefined, 'no sandbox started');
  assert.equal(failed.error?.type, 'ImageMissingError');
  const refused = runOutcome(
    JSON.stringify({ status: 'error', error: { type: 'InvalidArguments', message: 'timeout: must be at most 300 seconds' } }),
  );
  assert.ok(REFUSED_TYPES.includes(refused.error!.type));
  assert.deepEqual(runOutcome('Input validation error: reset'), { text: 'Input validation error: reset' });
});

test('a text-only result: the status comes from the run in the log, and the audit note from the text', () => {
  const text = 'Out: 42\n[the audit log is not being written (disk full): this run is not recorded]';
  const plain = runOutcome(text);
  assert.equal(plain.status, undefined, 'the text alone says no status');
  assert.equal(plain.auditLog, 'the audit log is not being written (disk full): this run is not recorded');
  const ok = outcomeOfRun({ status: 'ok', session: 'default', durationMs: 12, error: null }, 'Out: 42');
  assert.deepEqual(ok, { text: 'Out: 42', session: 'default', status: 'ok', durationMs: 12 });
  const failed = outcomeOfRun(
    { status: 'error', session: 's', durationMs: 3, error: { type: 'RuntimeUnavailableError', message: 'no runtime' }, notRun: true },
    'RuntimeUnavailableError: no runtime',
  );
  assert.deepEqual([failed.error, failed.notRun], [{ type: 'RuntimeUnavailableError', message: 'no runtime' }, true]);
});

test('the run of a Run Selection call is found in the log by its code, session and time', () => {
  const since = Date.parse('2026-12-01T10:00:00Z');
  const run = (id: string, code: string, started: string, session = 'default') => ({ id, code, session, started });
  const runs = [
    run('old', 'x + 1', '2026-12-01T09:00:00.000Z'),
    run('other-session', 'x + 1', '2026-12-01T10:00:01.000Z', 'mine'),
    run('first', 'x + 1', '2026-12-01T10:00:01.000Z'),
    run('newest', 'x + 1', '2026-12-01T10:00:02.000Z'),
    run('other-code', 'x + 2', '2026-12-01T10:00:03.000Z'),
  ];
  assert.equal(findCallRun(runs, 'x + 1', 'default', since)?.id, 'newest');
  assert.equal(findCallRun(runs, 'x + 1', 'mine', since)?.id, 'other-session');
  assert.equal(findCallRun(runs, 'x + 3', 'default', since), undefined);
});

test('untrusted workspaces: a workspace value of a restricted setting never applies', () => {
  const inspected = { defaultValue: 128, globalValue: 256, workspaceValue: 65536 };
  assert.deepEqual(settingValue(inspected, true, 65536), { value: 65536, ignored: false });
  assert.deepEqual(settingValue(inspected, false, 65536), { value: 256, ignored: true });
  assert.deepEqual(settingValue({ defaultValue: '512m', workspaceFolderValue: '64g' }, false, '64g'), { value: '512m', ignored: true });
  assert.deepEqual(settingValue({ defaultValue: 30 }, false, 30), { value: 30, ignored: false });
});

test('every setting of the extension is restricted in untrusted workspaces, and read through the rule', () => {
  const manifest = JSON.parse(readFileSync('package.json', 'utf8')) as {
    capabilities: { untrustedWorkspaces: { restrictedConfigurations: string[] } };
    contributes: { configuration: { properties: Record<string, unknown> } };
  };
  const declared = Object.keys(manifest.contributes.configuration.properties);
  const restricted = manifest.capabilities.untrustedWorkspaces.restrictedConfigurations;
  assert.deepEqual(
    declared.filter((key) => !restricted.includes(key)),
    [],
    'settings a workspace could still set',
  );
  assert.deepEqual(
    restricted.filter((key) => !RESTRICTED_SETTINGS.includes(key)),
    [],
    'restricted in package.json but not read through the rule',
  );
  const sandboxKeys = declared
    .filter((k) => k.startsWith('codeExecutionMode.sandbox.'))
    .map((k) => k.slice('codeExecutionMode.sandbox.'.length));
  assert.deepEqual(
    sandboxKeys.filter((k) => !(SANDBOX_SETTING_KEYS as readonly string[]).includes(k)),
    [],
    'sandbox settings the extension does not read',
  );
});

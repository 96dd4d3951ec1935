// The files that let a VS Code window's next bridge tell its sessions they were reset, and why.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { noteRestart, RESTARTS_DIR, SessionsWithState, takeRestart } from '../../src/state/bridge-restarts.ts';

async function stateDir(t: { after(fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cem-restarts-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function recorded(dir: string, owner: string, names: string[]): Promise<void> {
  const sessions = new SessionsWithState(dir, owner, assert.fail);
  for (const name of names) sessions.add(name);
  await sessions.flush();
  assert.ok((await readdir(join(dir, RESTARTS_DIR))).includes(`${owner}.sessions.json`));
}

test("a restart for a settings change names the keys, and the previous bridge's sessions", async (t) => {
  const dir = await stateDir(t);
  await recorded(dir, 'window-1', ['default', 'other', 'default']);
  await noteRestart(dir, 'window-1', ['sandbox.memory']);
  await noteRestart(dir, 'window-1', ['sandbox.cpus']);
  const taken = await takeRestart(dir, 'window-1');
  assert.deepEqual(taken?.sessions, ['default', 'other']);
  assert.match(taken?.reason ?? '', /the bridge restarted after a settings change \(sandbox\.cpus, sandbox\.memory\)/);
  assert.equal(await takeRestart(dir, 'window-1'), undefined, 'taken once');
});

test('without a note the reason is the restart itself; without sessions there is nothing to tell; windows are apart', async (t) => {
  const dir = await stateDir(t);
  await recorded(dir, 'window-1', ['default']);
  await noteRestart(dir, 'window-2', ['sandbox.image']);
  assert.equal((await takeRestart(dir, 'window-1'))?.reason, 'the bridge restarted, which ends every session');
  assert.equal(await takeRestart(dir, 'window-2'), undefined);
  assert.equal(await takeRestart(dir, '../escape'), undefined, 'an owner that is not a plain name names no file');
});

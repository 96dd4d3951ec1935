// Finding and removing containers this product started. Containers carry the owner's
// `<hostname>/<pid>`; leftovers of a process that no longer runs (a crash, a kill -9) are
// removed, while those of another live bridge (a second VS Code window) are left alone. The
// same goes for the folders of their egress sockets (egress/socket-dir.ts).
import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import type { RuntimeRef } from './kernel-container.ts';
import { runCli } from '../engines/cli.ts';
import { listOwnedArgs, removeArgs } from '../engines/commands.ts';
import { processAlive } from '../../shared/process-alive.ts';
import { removeStaleSocketDirs } from '../egress/socket-dir.ts';

/** A container with our label: its id and the `<hostname>/<pid>` that started it ('' if none). */
export interface OwnedContainer {
  id: string;
  owner: string;
}

/** Every container with our label, running or not, with its owner. */
export async function listOwnedContainers(runtime: Pick<RuntimeRef, 'name' | 'command'>): Promise<OwnedContainer[]> {
  const { stdout } = await runCli(runtime.command, listOwnedArgs(runtime.name), { timeoutMs: 20_000 });
  return stdout.split('\n').flatMap((line) => {
    const [id = '', owner = ''] = line.trim().split('\t');
    return /^[0-9a-f]{12,64}$/.test(id) ? [{ id, owner }] : [];
  });
}

/** Removes our containers whose owning process on this host has gone. Returns how many. */
export async function removeOrphans(runtime: RuntimeRef): Promise<number> {
  removeStaleSocketDirs();
  const host = hostname();
  const orphans = (await listOwnedContainers(runtime)).flatMap(({ id, owner }) => {
    const match = /^(.*)\/(\d+)$/.exec(owner);
    return match && match[1] === host && !processAlive(Number(match[2])) ? [id] : [];
  });
  if (orphans.length > 0) await runCli(runtime.command, removeArgs(runtime.name, orphans), { timeoutMs: 60_000 });
  return orphans.length;
}

/** Last-chance removal at process exit, when nothing asynchronous runs any more. */
export function removeNow(runtime: RuntimeRef, names: readonly string[]): void {
  if (names.length === 0) return;
  spawnSync(runtime.command, removeArgs(runtime.name, names), { stdio: 'ignore', timeout: 10_000 });
}

// Finding and removing containers this product started. Containers carry the owner's
// `<hostname>/<pid>`; leftovers of a process that no longer runs (a crash, a kill -9) are
// removed, while those of another live bridge (a second VS Code window) are left alone. The
// same goes for the folders of their egress sockets (egress/socket-dir.ts).
import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { z } from 'zod';
import type { RuntimeRef } from './kernel-container.ts';
import { runCli } from '../engines/cli.ts';
import { labelsArgs, listOwnedArgs, OWNER_LABEL, removeArgs } from '../engines/commands.ts';
import { processAlive } from '../../shared/process-alive.ts';
import { removeStaleSocketDirs } from '../egress/socket-dir.ts';

const labelsSchema = z.record(z.string(), z.string()).nullable();

/** IDs of every container with our label, running or not. */
export async function listOwnedContainers(command: string): Promise<string[]> {
  const { stdout } = await runCli(command, listOwnedArgs(), { timeoutMs: 20_000 });
  return stdout
    .split('\n')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Removes our containers whose owning process on this host has gone. Returns how many. */
export async function removeOrphans(runtime: RuntimeRef): Promise<number> {
  removeStaleSocketDirs();
  const ids = await listOwnedContainers(runtime.command);
  if (ids.length === 0) return 0;
  const host = hostname();
  const orphans: string[] = [];
  // Containers may vanish between the listing and the inspection (their owner is exiting),
  // so each answer names its container, and a failed inspection is retried one by one.
  const lines = await runCli(runtime.command, labelsArgs(ids), { timeoutMs: 20_000 }).then(
    (out) => out.stdout.split('\n'),
    async () => {
      const each = await Promise.all(
        ids.map((id) =>
          runCli(runtime.command, labelsArgs([id]), { timeoutMs: 20_000 }).then(
            (o) => o.stdout,
            () => '',
          ),
        ),
      );
      return each.flatMap((text) => text.split('\n'));
    },
  );
  for (const line of lines) {
    const [id, json] = line.split('\t');
    if (!id || !json) continue;
    const labels = labelsSchema.safeParse(safeJson(json));
    const owner = labels.success ? labels.data?.[OWNER_LABEL] : undefined;
    const match = owner ? /^(.*)\/(\d+)$/.exec(owner) : null;
    if (match && match[1] === host && !processAlive(Number(match[2]))) orphans.push(id);
  }
  if (orphans.length > 0) await runCli(runtime.command, removeArgs(runtime.name, orphans), { timeoutMs: 60_000 });
  return orphans.length;
}

/** Last-chance removal at process exit, when nothing asynchronous runs any more. */
export function removeNow(runtime: RuntimeRef, names: readonly string[]): void {
  if (names.length === 0) return;
  spawnSync(runtime.command, removeArgs(runtime.name, names), { stdio: 'ignore', timeout: 10_000 });
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

// Pulling the sandbox image explicitly, with the runtime's progress passed on line by line.
// Runs never pull implicitly (`--pull never`), so a first run cannot stall on a download. And
// the image's ID before any check, for what is remembered of it.
import { execa } from 'execa';
import type { SandboxConfig } from '../../config/schema.ts';
import { SandboxError } from '../errors.ts';
import { cliArgv, runCli } from '../engines/cli.ts';
import { imageExistsArgs, pullArgs } from '../engines/commands.ts';
import { candidates, locateConfigured, runtimeForPull, type DetectOptions } from '../engines/detect.ts';
import { pullFailureHint } from './pull-failure.ts';

export async function pullImage(
  sandbox: SandboxConfig,
  onProgress: (line: string) => void,
  options: { detect?: DetectOptions; signal?: AbortSignal } = {},
): Promise<void> {
  const runtime = await runtimeForPull(sandbox, options.detect);
  onProgress(`Pulling ${sandbox.image} with ${runtime.name}...`);
  const child = execa(runtime.command, cliArgv(runtime.command, pullArgs(sandbox.image)), {
    reject: false,
    all: true,
    buffer: false,
    ...(options.signal ? { cancelSignal: options.signal } : {}),
  });
  let tail = '';
  for await (const line of child.iterable({ from: 'all' })) {
    const text = String(line).trim();
    if (!text) continue;
    tail = text;
    onProgress(text);
  }
  const result = await child;
  if (result.failed) {
    const said = (tail || `exit code ${result.exitCode}`).replace(/\.$/, '');
    throw new SandboxError(`Pulling ${sandbox.image} with ${runtime.name} failed: ${said}.${pullFailureHint(said)}`);
  }
  onProgress(`${sandbox.image} is ready.`);
}

/**
 * The ID of sandbox.image in the first runtime (in the order the check tries them) that has
 * it, read as the runtime check reads it: one `image inspect` per runtime tried, no container.
 * Undefined when none has it or none answers in time.
 */
export async function imageIdAtStart(sandbox: SandboxConfig, timeoutMs: number): Promise<string | undefined> {
  for (const name of candidates(sandbox)) {
    const command = locateConfigured(name, sandbox);
    const id = await runCli(command, imageExistsArgs(sandbox.image), { timeoutMs }).then(
      (out) => out.stdout.trim(),
      () => '',
    );
    if (/^[A-Za-z0-9:]{1,200}$/.test(id)) return id;
  }
  return undefined;
}

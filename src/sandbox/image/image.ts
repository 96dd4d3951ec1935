// Pulling the sandbox image explicitly, with the runtime's progress passed on line by line.
// Runs never pull implicitly (`--pull never`), so a first run cannot stall on a download.
import { execa } from 'execa';
import type { SandboxConfig } from '../../config/schema.ts';
import { SandboxError } from '../errors.ts';
import { pullArgs } from '../engines/commands.ts';
import { runtimeForPull, type DetectOptions } from '../engines/detect.ts';
import { pullFailureHint } from './pull-failure.ts';

export async function pullImage(
  sandbox: SandboxConfig,
  onProgress: (line: string) => void,
  options: { detect?: DetectOptions; signal?: AbortSignal } = {},
): Promise<void> {
  const runtime = await runtimeForPull(sandbox, options.detect);
  onProgress(`Pulling ${sandbox.image} with ${runtime.name}...`);
  const child = execa(runtime.command, pullArgs(sandbox.image), {
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

// Runs short container-CLI commands (version, info, kill, ps). Never through a shell: argv is
// a list of tokens. A failure carries the CLI's own stderr, which is what a person needs.
import { execa } from 'execa';

export class CliError extends Error {
  override readonly name = 'CliError';
  readonly command: string;
  readonly args: readonly string[];
  readonly exitCode: number | undefined;
  readonly stderr: string;
  readonly notFound: boolean;

  constructor(command: string, args: readonly string[], exitCode: number | undefined, stderr: string, notFound: boolean) {
    super(
      notFound
        ? `${command} was not found on PATH`
        : `${command} ${args.join(' ')} failed${exitCode === undefined ? '' : ` (exit ${exitCode})`}: ${stderr.trim() || 'no error output'}`,
    );
    this.command = command;
    this.args = args;
    this.exitCode = exitCode;
    this.stderr = stderr;
    this.notFound = notFound;
  }
}

export interface CliResult {
  stdout: string;
  stderr: string;
}

export async function runCli(
  command: string,
  args: readonly string[],
  options: { timeoutMs?: number; input?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<CliResult> {
  const result = await execa(command, args, {
    reject: false,
    timeout: options.timeoutMs ?? 30_000,
    input: options.input,
    env: options.env,
    stripFinalNewline: true,
    maxBuffer: 16 * 1024 * 1024,
  });
  if (result.failed) {
    const notFound = (result.cause as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
    const stderr = result.timedOut ? `timed out after ${options.timeoutMs ?? 30_000} ms` : String(result.stderr ?? '');
    throw new CliError(command, args, result.exitCode, stderr, notFound);
  }
  return { stdout: String(result.stdout ?? ''), stderr: String(result.stderr ?? '') };
}

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

/**
 * Arguments every call of a runtime's CLI starts with (`--connection NAME`, `--context NAME`),
 * by the command that runs it, as the runtime check set them from the settings.
 */
const leadingArgs = new Map<string, readonly string[]>();

/** Sets (or, with none, clears) what every call of `command` starts with. */
export function setLeadingArgs(command: string, args: readonly string[]): void {
  if (args.length > 0) leadingArgs.set(command, [...args]);
  else leadingArgs.delete(command);
}

/** The full argument list of a call of `command`: its leading arguments, then `args`. */
export function cliArgv(command: string, args: readonly string[]): string[] {
  return [...(leadingArgs.get(command) ?? []), ...args];
}

export async function runCli(
  command: string,
  args: readonly string[],
  options: { timeoutMs?: number; input?: string; env?: NodeJS.ProcessEnv; plain?: boolean } = {},
): Promise<CliResult> {
  // `plain`: without the leading arguments, for what does not depend on the engine chosen.
  const result = await execa(command, options.plain ? [...args] : cliArgv(command, args), {
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

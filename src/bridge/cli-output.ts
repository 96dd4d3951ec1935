// How a run's result is shown on a terminal, and the exit status it maps to.
import type { RunResult, RunStatus } from '../sandbox/session.ts';

export function runToExitCode(status: RunStatus): number {
  switch (status) {
    case 'ok':
      return 0;
    case 'error':
      return 1;
    case 'timeout':
      return 124;
    case 'cancelled':
      return 130;
  }
}

/** Writes what was not streamed live: the rest of the output, the value, the error. */
export function writeRunResult(result: RunResult, printed: { stdout: number; stderr: number }): void {
  process.stdout.write(result.stdout.slice(printed.stdout));
  process.stderr.write(result.stderr.slice(printed.stderr));
  if (result.value !== null) process.stdout.write(`${result.value}\n`);
  if (result.images.length > 0) process.stderr.write(`[${result.images.length} image(s) emitted; use --json to get them]\n`);
  if (result.error) {
    process.stderr.write(result.error.traceback || `${result.error.type}: ${result.error.message}\n`);
    if (result.error.traceback && (result.status === 'timeout' || result.status === 'cancelled' || !result.error.traceback.includes(result.error.message))) {
      process.stderr.write(`${result.error.type}: ${result.error.message}\n`);
    }
  }
}

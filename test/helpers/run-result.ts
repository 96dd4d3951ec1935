// A run's result for tests that shape, log or print one: an ok run with nothing in it, plus
// what the test sets.
import type { RunResult } from '../../src/sandbox/index.ts';

export function runResult(overrides: Partial<RunResult> = {}): RunResult {
  return {
    runId: 'r',
    session: 'default',
    status: 'ok',
    stdout: '',
    stderr: '',
    value: null,
    error: null,
    images: [],
    durationMs: 1,
    omitted: { stdout: 0, stderr: 0, images: 0 },
    truncated: false,
    sessionLost: false,
    coldStart: false,
    requests: 0,
    ...overrides,
  };
}

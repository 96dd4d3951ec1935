// sandbox.extraRunArgs is an allow-list: only options that cannot weaken the sandbox, each
// with its value checked. A deny-list cannot hold: the CLIs accept short-flag clusters
// (`-iv/:/host`), attached values (`-u0`), `--opt=false` forms and options that override
// ours when they come later. Everything else is refused, naming the token.

/** Options accepted in extraRunArgs, with the shape their value must have. */
const ALLOWED_RUN_OPTIONS: Readonly<Record<string, RegExp>> = {
  // Per-process limits inside the container (open files, core size, ...).
  '--ulimit': /^[a-z]+=-?\d+(:-?\d+)?$/,
  '--shm-size': /^[1-9]\d*[bkmg]?$/i,
  // Relative CPU weight and pinning; the product sets the CPU limit itself (--cpus).
  '--cpu-shares': /^\d{1,6}$/,
  '--cpuset-cpus': /^\d+([-,]\d+)*$/,
  '--cpuset-mems': /^\d+([-,]\d+)*$/,
  '--blkio-weight': /^\d{1,4}$/,
  // A soft memory target below the product's hard limit.
  '--memory-reservation': /^[1-9]\d*[bkmg]$/i,
  '--oom-score-adj': /^\d{1,4}$/,
  // For an image of another architecture (emulated).
  '--platform': /^[a-z0-9]+\/[a-z0-9_]+(\/[a-z0-9]+)?$/,
};

export interface RunArgProblem {
  /** Index of the offending token in the list. */
  index: number;
  message: string;
}

/** Parses `--opt value` and `--opt=value` pairs; returns every problem found. */
export function checkExtraRunArgs(args: readonly string[]): RunArgProblem[] {
  const problems: RunArgProblem[] = [];
  for (let i = 0; i < args.length; i++) {
    const token = args[i]!;
    if (!token.startsWith('--')) {
      problems.push({
        index: i,
        message: token.startsWith('-')
          ? `"${token}": short options are not accepted; use one of ${Object.keys(ALLOWED_RUN_OPTIONS).join(', ')}`
          : `"${token}": a value without an option (only options are accepted, each followed by its value)`,
      });
      continue;
    }
    const eq = token.indexOf('=');
    const name = eq >= 0 ? token.slice(0, eq) : token;
    const shape = Object.hasOwn(ALLOWED_RUN_OPTIONS, name) ? ALLOWED_RUN_OPTIONS[name] : undefined;
    if (!shape) {
      problems.push({
        index: i,
        message: `"${name}" is not accepted: extraRunArgs takes only options that cannot weaken the sandbox (${Object.keys(ALLOWED_RUN_OPTIONS).join(', ')})`,
      });
      continue;
    }
    let value: string | undefined;
    if (eq >= 0) value = token.slice(eq + 1);
    else {
      value = args[i + 1];
      if (value !== undefined) i++;
    }
    if (value === undefined || !shape.test(value)) {
      problems.push({ index: i, message: `"${name}" needs a value like ${example(name)}${value === undefined ? '' : `, not "${value}"`}` });
    }
  }
  return problems;
}

function example(name: string): string {
  const examples: Record<string, string> = {
    '--ulimit': 'nofile=1024:1024',
    '--shm-size': '64m',
    '--cpu-shares': '512',
    '--cpuset-cpus': '0-1',
    '--cpuset-mems': '0',
    '--blkio-weight': '500',
    '--memory-reservation': '256m',
    '--oom-score-adj': '500',
    '--platform': 'linux/amd64',
  };
  return examples[name] ?? 'the documented form';
}

// What gVisor (sandbox.ociRuntime "runsc") costs: a new session's first run with nothing started
// ahead (container start included) and a warm run, beside the runtime's default OCI runtime.
// A runtime where runsc cannot run (not installed; docker: not registered) is skipped with why.
import { defaultSandboxConfig, type RuntimeName } from '../src/config/schema.ts';
import { checkRuntime } from '../src/sandbox/engines/detect.ts';
import { SessionManager } from '../src/sandbox/sessions/manager.ts';
import { ms, summarize, timeEach, type Summary } from './stats.ts';

export interface GvisorRow {
  runtime: RuntimeName;
  /** Why there are no gVisor figures, when there are none. */
  skipped?: string;
  default?: { ociRuntime: string; cold: Summary; warm: Summary };
  gvisor?: { cold: Summary; warm: Summary };
}

async function tierFigures(runtime: RuntimeName, image: string, n: number, ociRuntime?: string): Promise<{ cold: Summary; warm: Summary }> {
  const sandbox = new SessionManager(defaultSandboxConfig({ runtime, image, prewarm: false, ...(ociRuntime ? { ociRuntime } : {}) }));
  try {
    await sandbox.execute('pass', { session: 'prime' });
    await sandbox.closeSession('prime');
    const coldSamples: number[] = [];
    for (let i = 0; i < n; i++) {
      const started = performance.now();
      const result = await sandbox.execute('print(1)', { session: `cold-${i}` });
      coldSamples.push(performance.now() - started);
      if (result.stdout !== '1\n' || !result.coldStart) throw new Error(`unexpected cold result ${JSON.stringify(result)}`);
      await sandbox.closeSession(`cold-${i}`);
    }
    await sandbox.execute('pass', { session: 'warm' });
    const warm = await timeEach(Math.max(n, 20), async () => {
      const result = await sandbox.execute('print(1)', { session: 'warm' });
      if (result.stdout !== '1\n' || result.coldStart) throw new Error('unexpected warm result');
    });
    return { cold: summarize(coldSamples), warm: summarize(warm) };
  } finally {
    await sandbox.close();
  }
}

export async function gvisorFigures(runtime: RuntimeName, image: string, n: number): Promise<GvisorRow> {
  const status = await checkRuntime(runtime, defaultSandboxConfig({ runtime, image, ociRuntime: 'runsc' }));
  if (status.state !== 'ready' && status.state !== 'limits-not-enforced') {
    return { runtime, skipped: status.problems[0] ?? `runsc does not run with ${runtime} here` };
  }
  const plain = await tierFigures(runtime, image, n);
  const gvisor = await tierFigures(runtime, image, n, 'runsc');
  return { runtime, default: { ociRuntime: status.defaultOciRuntime ?? 'default', ...plain }, gvisor };
}

export function printGvisor(rows: readonly GvisorRow[], n: number): void {
  console.log(
    `\ngVisor (sandbox.ociRuntime "runsc") beside the default OCI runtime: print(1), ${n} cold / ${Math.max(n, 20)} warm runs (p50 / p95)\n`,
  );
  console.log('| runtime | OCI runtime | cold session (first run, no spare) | warm session |');
  console.log('|---|---|---|---|');
  for (const row of rows) {
    if (!row.default || !row.gvisor) {
      console.log(`| ${row.runtime} | runsc | skipped: ${row.skipped ?? 'no figures'} | |`);
      continue;
    }
    console.log(
      `| ${row.runtime} | ${row.default.ociRuntime} | ${ms(row.default.cold.p50)} / ${ms(row.default.cold.p95)} | ${ms(row.default.warm.p50)} / ${ms(row.default.warm.p95)} |`,
    );
    console.log(
      `| ${row.runtime} | runsc (gVisor) | ${ms(row.gvisor.cold.p50)} / ${ms(row.gvisor.cold.p95)} (${(row.gvisor.cold.p50 / row.default.cold.p50).toFixed(2)}x) | ` +
        `${ms(row.gvisor.warm.p50)} / ${ms(row.gvisor.warm.p95)} (${(row.gvisor.warm.p50 / row.default.warm.p50).toFixed(2)}x) |`,
    );
  }
}

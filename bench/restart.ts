// What a `reset` and a lost session cost, as the bridge runs them (a spare container kept
// started). Run alone: `node bench/restart.ts [n]`; `npm run bench` includes it.
import { pathToFileURL } from 'node:url';
import { defaultSandboxConfig, type RuntimeName } from '../src/config/schema.ts';
import { SessionManager } from '../src/sandbox/sessions/manager.ts';
import { IGNORED_GRACE_MS } from '../src/sandbox/sessions/run.ts';
import { ms, summarize, type Summary } from './stats.ts';

export interface RestartRow {
  runtime: RuntimeName;
  /** A spare container was kept started (the bridge's default), or not. */
  spare: boolean;
  /** `reset: true` on a warm session, end to end (the run itself is `1`). */
  reset: Summary;
  /** A run that catches its interrupt and goes on: time to its result beyond timeout + the 250 ms it is then given. */
  lostOverhead: Summary;
  /** The run after a lost one (same session). */
  afterLost: Summary;
}

const STUBBORN = 'while True:\n    try:\n        while True:\n            pass\n    except KeyboardInterrupt:\n        pass';

export async function restartFigures(runtime: RuntimeName, image: string, n: number, spare = true): Promise<RestartRow> {
  const graceSeconds = 1;
  const timeoutMs = 300;
  const sandbox = new SessionManager(defaultSandboxConfig({ runtime, image, interruptGraceSeconds: graceSeconds, prewarm: spare }));
  const reset: number[] = [];
  const lostOverhead: number[] = [];
  const afterLost: number[] = [];
  try {
    await sandbox.execute('x = 1', { session: 's' });
    for (let i = 0; i < n; i++) {
      await sandbox.prewarm();
      await sandbox.execute('x = 1', { session: 's' });
      let started = performance.now();
      const fresh = await sandbox.execute('"x" in globals()', { session: 's', reset: true });
      reset.push(performance.now() - started);
      if (fresh.value !== 'False') throw new Error(`reset kept state: ${JSON.stringify(fresh)}`);

      await sandbox.prewarm();
      started = performance.now();
      const lost = await sandbox.execute(STUBBORN, { session: 's', timeoutMs });
      lostOverhead.push(performance.now() - started - timeoutMs - Math.min(IGNORED_GRACE_MS, graceSeconds * 1000));
      if (!lost.sessionLost) throw new Error(`the session was not lost: ${JSON.stringify(lost)}`);
      started = performance.now();
      const next = await sandbox.execute('1', { session: 's' });
      afterLost.push(performance.now() - started);
      if (next.value !== '1') throw new Error(`unexpected run after a lost one: ${JSON.stringify(next)}`);
    }
    return { runtime, spare, reset: summarize(reset), lostOverhead: summarize(lostOverhead), afterLost: summarize(afterLost) };
  } finally {
    await sandbox.close();
  }
}

export function printRestart(rows: RestartRow[]): void {
  console.log(`\nReset and lost session (p50 / p95, n = ${rows[0]?.reset.n ?? 0})\n`);
  console.log('| runtime | spare container | `reset: true` run | lost session: result after timeout + 250 ms | run after a lost one |');
  console.log('|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.runtime} | ${r.spare ? 'kept' : 'none'} | ${ms(r.reset.p50)} / ${ms(r.reset.p95)} | +${ms(r.lostOverhead.p50)} / +${ms(r.lostOverhead.p95)} | ` +
        `${ms(r.afterLost.p50)} / ${ms(r.afterLost.p95)} |`,
    );
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const n = Number(process.argv[2] ?? 5);
  const image = process.env.CEM_TEST_IMAGE ?? 'localhost/cem-sandbox:bookworm';
  const runtimes = (process.env.CEM_TEST_RUNTIMES ?? 'podman,docker').split(',') as RuntimeName[];
  const rows: RestartRow[] = [];
  for (const runtime of runtimes) {
    for (const spare of [true, false]) rows.push(await restartFigures(runtime, image, n, spare));
  }
  printRestart(rows);
  console.log(JSON.stringify(rows));
}

// `npm run bench`: performance figures beside their baselines, measured in one run on this
// machine. `--smoke` runs each measurement a couple of times only, to prove the bench works.
import { execa } from 'execa';
import { mkdir, writeFile } from 'node:fs/promises';
import { defaultSandboxConfig, type RuntimeName } from '../src/config/schema.ts';
import { SessionManager } from '../src/sandbox/sessions/manager.ts';
import { evaluateNoMatch, evaluateSearch, NO_MATCH_SETS, QUERY_SETS } from '../test/helpers/search-eval.ts';
import { callFigures, listingFigures } from './bridge.ts';
import { contextFigures, searchLatency } from './catalog.ts';
import { footprintFigures, loadFigures } from './footprint.ts';
import { gvisorFigures, printGvisor, type GvisorRow } from './gvisor.ts';
import { printRestart, restartFigures, type RestartRow } from './restart.ts';
import { ms, summarize, timeEach, type Summary } from './stats.ts';
import { printWasm, wasmFigures } from './wasm.ts';
import { useScratchTmp } from '../scripts/scratch-tmp.ts';
import { bareStart, freshBridge, pipeRoundTrip, warmThroughMcp } from './warm.ts';

// What the bench's bridges leave in the temp folder goes with the run.
useScratchTmp('cem-bench-');
const smoke = process.argv.includes('--smoke');
const N = smoke ? 2 : Number(process.env.CEM_BENCH_N ?? 30);
const image = process.env.CEM_TEST_IMAGE ?? 'localhost/cem-sandbox:bookworm';
const runtimes = (process.env.CEM_TEST_RUNTIMES ?? 'podman,docker').split(',') as RuntimeName[];

interface LatencyRow {
  runtime: RuntimeName;
  bareStart: Summary;
  freshContainerPerCall: Summary;
  coldSession: Summary;
  prewarmedSession: Summary;
  warm: Summary;
}

async function latency(runtime: RuntimeName): Promise<LatencyRow> {
  const bareStart = summarize(
    await timeEach(N, () => execa(runtime, ['run', '--rm', '--network', 'none', image, 'python3', '-c', 'pass'])),
  );
  const sandbox = new SessionManager(defaultSandboxConfig({ runtime, image }));
  try {
    await sandbox.execute('pass', { session: 'prime' });
    await sandbox.closeSession('prime');
    // The original bridge's design: a new container for every call.
    const freshContainerPerCall = summarize(
      await timeEach(N, async (i) => {
        await sandbox.execute('print(1)', { session: `fresh-${i}` });
        await sandbox.closeSession(`fresh-${i}`);
      }),
    );
    // Timed: the first run of a new session. Not timed: closing it before the next one.
    const coldSamples: number[] = [];
    for (let i = 0; i < N; i++) {
      const started = performance.now();
      const result = await sandbox.execute('print(1)', { session: `cold-${i}` });
      coldSamples.push(performance.now() - started);
      if (result.stdout !== '1\n' || !result.coldStart) throw new Error(`unexpected cold result ${JSON.stringify(result)}`);
      await sandbox.closeSession(`cold-${i}`);
    }
    const coldSession = summarize(coldSamples);
    // The bridge keeps a spare container started: a new session's first run takes it.
    const prewarmedSamples: number[] = [];
    for (let i = 0; i < N; i++) {
      await sandbox.prewarm();
      const started = performance.now();
      const result = await sandbox.execute('print(1)', { session: `pre-${i}` });
      prewarmedSamples.push(performance.now() - started);
      if (result.stdout !== '1\n' || result.coldStart) throw new Error('the spare was not used');
      await sandbox.closeSession(`pre-${i}`);
    }
    const prewarmedSession = summarize(prewarmedSamples);
    await sandbox.execute('pass', { session: 'warm' });
    const warm = summarize(
      await timeEach(Math.max(N, 20), async () => {
        const result = await sandbox.execute('print(1)', { session: 'warm' });
        if (result.stdout !== '1\n' || result.coldStart) throw new Error('unexpected warm result');
      }),
    );
    return { runtime, bareStart, freshContainerPerCall, coldSession, prewarmedSession, warm };
  } finally {
    await sandbox.close();
  }
}

const rows: LatencyRow[] = [];
for (const runtime of runtimes) rows.push(await latency(runtime));

console.log(`\nExecution latency of print(1), ${N} runs each (p50 / p95)\n`);
console.log(
  '| runtime | bare `run --rm python3 -c pass` | fresh container per call | cold session (first run) | new session, spare ready | warm session | warm vs fresh |',
);
console.log('|---|---|---|---|---|---|---|');
for (const r of rows) {
  const ratio = r.freshContainerPerCall.p50 / r.warm.p50;
  console.log(
    `| ${r.runtime} | ${ms(r.bareStart.p50)} / ${ms(r.bareStart.p95)} | ${ms(r.freshContainerPerCall.p50)} / ${ms(r.freshContainerPerCall.p95)} | ` +
      `${ms(r.coldSession.p50)} / ${ms(r.coldSession.p95)} (${(r.coldSession.p50 / r.bareStart.p50).toFixed(2)}x bare) | ` +
      `${ms(r.prewarmedSession.p50)} / ${ms(r.prewarmedSession.p95)} | ` +
      `${ms(r.warm.p50)} / ${ms(r.warm.p95)} | ${ratio.toFixed(0)}x faster |`,
  );
}

const gvisor: GvisorRow[] = [];
for (const runtime of runtimes) gvisor.push(await gvisorFigures(runtime, image, N));
printGvisor(gvisor, N);

const restarts: RestartRow[] = [];
for (const runtime of runtimes) {
  for (const spare of [true, false]) restarts.push(await restartFigures(runtime, image, smoke ? 1 : 10, spare));
}
printRestart(restarts);

const sandbox = { runtime: runtimes[0] ?? 'podman', image };
const listing = await listingFigures(sandbox);
console.log(
  "\nContext cost: tokens of the bridge's tools/list answer (gpt-tokenizer, o200k): what the model reads (name, description, input schema), and the whole answer (with the outputSchema)\n",
);
console.log('| configured servers | model reads | whole answer |');
console.log('|---|---|---|');
for (const row of listing) console.log(`| ${row.servers} | ${row.tokens} | ${row.answerTokens} |`);

// The bridge's own path through MCP, beside what it cannot go below (measured in the same run).
const pipe = await pipeRoundTrip(sandbox, smoke ? 5 : 300);
const [warmMcp] = await warmThroughMcp(sandbox, ['dist'], smoke ? 5 : 300);
const bare = await bareStart(sandbox, smoke ? 2 : 10);
const [fresh] = await freshBridge(sandbox, ['dist'], smoke ? 1 : 10);
console.log(`\nThrough MCP (${sandbox.runtime}; p50 / min)\n`);
console.log('| warm print(1) | bare pipe round trip | fresh bridge: spawn, initialize, first print(1) | bare `run --rm` | close |');
console.log('|---|---|---|---|---|');
console.log(
  `| ${ms(warmMcp!.p50)} / ${ms(warmMcp!.min)} | ${ms(pipe.p50)} / ${ms(pipe.min)} | ` +
    `${ms(fresh!.firstAnswer.p50)} / ${ms(fresh!.firstAnswer.min)} (${(fresh!.firstAnswer.p50 / bare.p50).toFixed(2)}x bare) | ` +
    `${ms(bare.p50)} / ${ms(bare.min)} | ${ms(fresh!.close.p50)} / ${ms(fresh!.close.min)} |`,
);

const calls = await callFigures(sandbox, smoke ? 5 : 200);
console.log(`\nProxied tool call (fixture echo over stdio), ${calls.direct.n} calls (p50 / p95)\n`);
console.log('| direct SDK client | from sandbox code | added per call (p50) | sequential calls/s from sandbox | 10 concurrent 1 s calls |');
console.log('|---|---|---|---|---|');
console.log(
  `| ${ms(calls.direct.p50)} / ${ms(calls.direct.p95)} | ${ms(calls.fromSandbox.p50)} / ${ms(calls.fromSandbox.p95)} | ` +
    `${ms(calls.overheadMsP50)} | ${calls.sequentialPerSecond.toFixed(0)} | ${calls.concurrent.seconds.toFixed(2)} s |`,
);

const wasm = await wasmFigures(N);
printWasm(wasm, N);

const bridgeTokens = listing[0]?.tokens ?? 0;
const context = contextFigures();
console.log("\nContext cost: listing every proxied tool directly vs the bridge's one tool\n");
console.log('| catalog | tools | direct listing tokens | bridge listing tokens | ratio |');
console.log('|---|---|---|---|---|');
for (const row of context) {
  console.log(
    `| ${row.catalog} | ${row.tools} | ${row.directTokens} | ${bridgeTokens} | ${(row.directTokens / bridgeTokens).toFixed(0)}x |`,
  );
}

const latency5000 = searchLatency(5000, smoke ? 2 : 40);
console.log(
  `\nSearch over ${latency5000.tools} tools: index built in ${ms(latency5000.buildMs)}, query p50 ${ms(latency5000.query.p50)}, p95 ${ms(latency5000.query.p95)}`,
);

const footprint = await footprintFigures(sandbox, smoke ? 1 : 10);
console.log('\nFootprint\n');
console.log(
  `- bridge start to first tools/list answer: p50 ${ms(footprint.startToToolsList.p50)}, p95 ${ms(footprint.startToToolsList.p95)}`,
);
console.log(
  `- bridge memory (RSS): idle ${footprint.idleRssMb.toFixed(0)} MB, with 4 warm sessions ${footprint.fourWarmSessionsRssMb.toFixed(0)} MB`,
);
for (const [file, bytes] of Object.entries(footprint.bundles)) console.log(`- ${file}: ${(bytes / 1024).toFixed(0)} KB`);

const load = await loadFigures(sandbox, smoke ? 8 : 200, smoke ? 0 : 10);
console.log(
  `\nLoad: ${load.executions} executions across 4 sessions, 2 at a time: ${load.correct}/${load.executions} correct in ${load.seconds.toFixed(2)} s ` +
    `(${load.perSecond.toFixed(0)}/s); bridge RSS ${load.rssBeforeMb.toFixed(0)} MB before, ${load.rssAfterMb.toFixed(0)} MB after`,
);
if (load.soakRssMb.length > 0) {
  console.log(`Soak: RSS after each further ${load.executions} executions: ${load.soakRssMb.map((m) => m.toFixed(0)).join(', ')} MB`);
}
const soak = JSON.parse(
  (await execa(process.execPath, ['--expose-gc', 'bench/heap-soak.ts', JSON.stringify(sandbox), smoke ? '2' : '6', smoke ? '10' : '300']))
    .stdout,
) as { perRound: number; heapMb: number[] };
console.log(`Soak: heap in use after a full GC, every ${soak.perRound} executions: ${soak.heapMb.map((m) => m.toFixed(1)).join(', ')} MB`);
if (load.correct !== load.executions) process.exitCode = 1;

// The extension's own figures come from the host suite (a real VS Code extension host).
let extension: Record<string, number> | undefined;
if (!smoke && !process.argv.includes('--no-host')) {
  const host = await execa(process.execPath, ['scripts/host-tests.mjs'], { reject: false, all: true });
  const line = /figures (\{.*\})/.exec(host.all ?? '')?.[1];
  extension = line ? (JSON.parse(line) as Record<string, number>) : undefined;
  console.log(
    extension
      ? `\nExtension (host suite): activate() ${ms(extension.activationMs ?? NaN)}; VS Code's server start to run_python listed ${ms(extension.startToToolsMs ?? NaN)}`
      : '\nExtension figures unavailable: the host suite did not report them (see npm run test:host)',
  );
}

const search = evaluateSearch();
console.log(
  `\nSearch quality: recall@1 ${search.recallAt1.toFixed(2)}, recall@5 ${search.recallAt5.toFixed(2)} (${search.queries} tuned queries over ${search.tools} real tools of npm MCP servers)`,
);
const holdout = evaluateSearch(undefined, QUERY_SETS.holdout);
console.log(
  `First held-out set (now a regression set): recall@1 ${holdout.recallAt1.toFixed(2)}, recall@5 ${holdout.recallAt5.toFixed(2)} (${holdout.queries} queries)`,
);
const holdout2 = evaluateSearch(undefined, QUERY_SETS.holdout2);
console.log(
  `Second held-out set (written before the ranking rework): recall@1 ${holdout2.recallAt1.toFixed(2)}, recall@5 ${holdout2.recallAt5.toFixed(2)} (${holdout2.queries} queries)`,
);

const noMatch = evaluateNoMatch(undefined, NO_MATCH_SETS.nomatch);
console.log(
  `Requests no tool serves (first held-out set): answered with nothing ${noMatch.empty.toFixed(2)}, with nothing or weak hits only ${noMatch.emptyOrWeak.toFixed(2)} (${noMatch.queries} requests)`,
);
const noMatch2 = evaluateNoMatch(undefined, NO_MATCH_SETS.nomatch2);
console.log(
  `Requests no tool serves (second held-out set): answered with nothing ${noMatch2.empty.toFixed(2)}, with nothing or weak hits only ${noMatch2.emptyOrWeak.toFixed(2)} (${noMatch2.queries} requests)`,
);
const noMatch3 = evaluateNoMatch(undefined, NO_MATCH_SETS.nomatch3);
console.log(
  `Requests no tool serves (third held-out set): answered with nothing ${noMatch3.empty.toFixed(2)}, with nothing or weak hits only ${noMatch3.emptyOrWeak.toFixed(2)} (${noMatch3.queries} requests)`,
);

await mkdir('bench/results', { recursive: true });
const figures = {
  date: new Date().toISOString(),
  smoke,
  n: N,
  latency: rows,
  gvisor,
  restarts,
  listing,
  throughMcp: { warm: warmMcp, pipe, bare, fresh },
  calls,
  wasm,
  context,
  searchLatency: latency5000,
  footprint,
  load,
  soak,
  extension,
  search: {
    recallAt1: search.recallAt1,
    recallAt5: search.recallAt5,
    queries: search.queries,
    tools: search.tools,
    holdout: { recallAt1: holdout.recallAt1, recallAt5: holdout.recallAt5, queries: holdout.queries },
    holdout2: { recallAt1: holdout2.recallAt1, recallAt5: holdout2.recallAt5, queries: holdout2.queries },
    noMatch: { empty: noMatch.empty, emptyOrWeak: noMatch.emptyOrWeak, queries: noMatch.queries },
    noMatch2: { empty: noMatch2.empty, emptyOrWeak: noMatch2.emptyOrWeak, queries: noMatch2.queries },
    noMatch3: { empty: noMatch3.empty, emptyOrWeak: noMatch3.emptyOrWeak, queries: noMatch3.queries },
  },
};
await writeFile('bench/results/latest.json', `${JSON.stringify(figures, null, 2)}\n`);
console.log('\nFigures written to bench/results/latest.json');

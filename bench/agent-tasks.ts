// What the model is handed over the agent tasks (test/helpers/agent-tasks.ts): per task, the
// number of run_python calls and the characters and o200k tokens of what comes back as text
// content (what VS Code's bridge sends, text only, and what most clients read); the run log's
// token meter of the same runs when the bridge records one (docs/run-log.md, `meter`); and, as a
// secondary column for clients that get it, the JSON of structuredContent; images apart; plus
// the listing's tokens. Prints a table and writes the figures to bench/results/agent-tasks-LABEL.json.
//
// It measures the bridge of the checkout it runs in (dist/cli.js and node_modules under the
// current directory), so that another checkout can be measured with this script:
//   node esbuild.mjs && node bench/agent-tasks.ts [--label after] [--calls] [--tasks 9,10]
//   cd OTHER-CHECKOUT && node esbuild.mjs && node PATH/TO/THIS/bench/agent-tasks.ts --label before
// A task that fails there (a feature the other checkout lacks) is reported as failed, with the
// reason, and the others go on. Runtime: the first of CEM_TEST_RUNTIMES (default podman); image:
// CEM_TEST_IMAGE; the image with packages (task 11): CEM_TEST_DATA_IMAGE.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { encode } from 'gpt-tokenizer';
import { modelListing, runTask, startTaskBench, TASKS, type CallRecord, type RunMeterFigures } from '../test/helpers/agent-tasks.ts';

const { values } = parseArgs({
  options: { label: { type: 'string', default: 'latest' }, calls: { type: 'boolean', default: false }, tasks: { type: 'string' } },
});
const chosen = values.tasks ? new Set(values.tasks.split(',').map(Number)) : undefined;
const label = values.label;
const runtime = (process.env.CEM_TEST_RUNTIMES ?? 'podman').split(',')[0]!.trim();
const image = process.env.CEM_TEST_IMAGE ?? 'localhost/cem-sandbox:bookworm';

const tokens = (s: string) => encode(s).length;

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '';
  }
}

interface CallFigures {
  label: string;
  status: string;
  textChars: number;
  textTokens: number;
  structuredChars: number;
  structuredTokens: number;
  images: number;
  imageBytes: number;
  resultBytes: number;
  /** The run log's meter of the run; absent when the bridge records none. */
  meter?: RunMeterFigures;
}

function figuresOf(call: CallRecord): CallFigures {
  return {
    label: call.label,
    status: call.status,
    textChars: call.text.length,
    textTokens: tokens(call.text),
    structuredChars: call.structuredJson.length,
    structuredTokens: tokens(call.structuredJson),
    images: call.images.length,
    imageBytes: call.images.reduce((n, i) => n + Math.floor((i.data.length * 3) / 4), 0),
    resultBytes: call.resultBytes,
    ...(call.meter ? { meter: call.meter } : {}),
  };
}

type Summed = 'textChars' | 'textTokens' | 'structuredChars' | 'structuredTokens' | 'images' | 'imageBytes' | 'resultBytes';
const sum = (calls: CallFigures[], key: Summed) => calls.reduce((n, c) => n + c[key], 0);

/** The meter's figures over calls, when every one of them has a meter. */
function meterOf(calls: CallFigures[]): { modelTokens: number; keptBytes: number; listingTokens: number } | undefined {
  if (calls.length === 0 || calls.some((c) => !c.meter)) return undefined;
  const add = (key: 'modelTokens' | 'keptBytes' | 'listingTokens') => calls.reduce((n, c) => n + c.meter![key], 0);
  return { modelTokens: add('modelTokens'), keptBytes: add('keptBytes'), listingTokens: add('listingTokens') };
}
const int = (n: number) => n.toLocaleString('en-US');

const bench = await startTaskBench(runtime, image);
interface Row {
  id: number;
  name: string;
  calls: CallFigures[];
  /** Why the task did not run (its image is missing), or how it failed (a feature this checkout lacks). */
  skipped?: string;
  failed?: string;
}
const rows: Row[] = [];
try {
  for (const task of TASKS.filter((t) => !chosen || chosen.has(t.id))) {
    try {
      const agent = await runTask(task, bench);
      rows.push({ id: task.id, name: task.name, calls: agent.calls.map(figuresOf), ...(agent.skipped ? { skipped: agent.skipped } : {}) });
    } catch (error) {
      rows.push({
        id: task.id,
        name: task.name,
        calls: [],
        failed: error instanceof Error ? error.message.split('\n')[0]! : String(error),
      });
    }
  }
} finally {
  await bench.close();
}

const listingJson = JSON.stringify(modelListing(bench));
const toolsListJson = JSON.stringify(bench.listing.tools);
const listing = {
  // name, description and input schema: what clients put in front of the model
  chars: listingJson.length,
  tokens: tokens(listingJson),
  // the whole tools/list answer (with an outputSchema, if any)
  toolsListChars: toolsListJson.length,
  toolsListTokens: tokens(toolsListJson),
  instructionsChars: bench.listing.instructions.length,
  instructionsTokens: tokens(bench.listing.instructions),
};
const commit = git(['rev-parse', '--short', 'HEAD']);
const dirty = git(['status', '--porcelain', '--', 'src']) !== '';
const checkout = `${process.cwd()} at ${commit || 'unknown commit'}${dirty ? ' with uncommitted changes in src/' : ''}`;

const kb = (bytes: number) => int(Math.round(bytes / 1024));
const meterCell = (calls: CallFigures[]) => {
  const m = meterOf(calls);
  return m ? `${int(m.modelTokens)} / ${kb(m.keptBytes)} / ${int(m.listingTokens)}` : '—';
};
console.log(`\nWhat the model is handed over the agent tasks (${label}; ${checkout}; ${runtime}; o200k tokens)\n`);
console.log(
  '| task | run_python calls | text: chars / tokens | meter: tokens / kept KB / direct listing tokens | images (KB) | structuredContent JSON, for other clients: chars / tokens |',
);
console.log('|---|---|---|---|---|---|');
for (const row of rows) {
  const c = row.calls;
  if (row.skipped || row.failed) {
    console.log(`| ${row.id} ${row.name} | ${row.skipped ? `skipped: ${row.skipped}` : `failed: ${row.failed}`} | | | | |`);
    continue;
  }
  console.log(
    `| ${row.id} ${row.name} | ${c.length} (${c.map((x) => x.label).join(', ')}) | ${int(sum(c, 'textChars'))} / ${int(sum(c, 'textTokens'))} | ` +
      `${meterCell(c)} | ${sum(c, 'images')} (${kb(sum(c, 'imageBytes'))}) | ${int(sum(c, 'structuredChars'))} / ${int(sum(c, 'structuredTokens'))} |`,
  );
}
const all = rows.flatMap((r) => r.calls);
console.log(
  `| **all** | **${all.length}** | **${int(sum(all, 'textChars'))} / ${int(sum(all, 'textTokens'))}** | ${meterCell(all)} | ` +
    `${sum(all, 'images')} (${kb(sum(all, 'imageBytes'))}) | ${int(sum(all, 'structuredChars'))} / ${int(sum(all, 'structuredTokens'))} |`,
);
console.log(
  `\nListing (name, description, input schema): ${listing.tokens} tokens (${listing.chars} characters); the whole tools/list answer: ${listing.toolsListTokens} tokens; ` +
    `server instructions: ${listing.instructionsTokens} tokens.`,
);
const largest = [...all].sort((a, b) => Math.max(b.textChars, b.structuredChars) - Math.max(a.textChars, a.structuredChars))[0];
if (largest)
  console.log(
    `Largest single run: ${largest.label}, ${int(largest.textChars)} characters of text, ${int(largest.structuredChars)} of structured content.`,
  );

if (values.calls) {
  console.log('\n| task | call | status | text chars / tokens | meter tokens / kept bytes | images | structured chars / tokens |');
  console.log('|---|---|---|---|---|---|---|');
  for (const row of rows) {
    for (const c of row.calls) {
      console.log(
        `| ${row.id} | ${c.label} | ${c.status} | ${int(c.textChars)} / ${int(c.textTokens)} | ` +
          `${c.meter ? `${int(c.meter.modelTokens)} / ${int(c.meter.keptBytes)}` : '—'} | ${c.images} | ${int(c.structuredChars)} / ${int(c.structuredTokens)} |`,
      );
    }
  }
}

const dir = fileURLToPath(new URL('./results/', import.meta.url));
mkdirSync(dir, { recursive: true });
const file = `${dir}agent-tasks-${label.replace(/[^\w.-]/g, '_')}.json`;
const totals = (calls: CallFigures[]) => ({
  calls: calls.length,
  textChars: sum(calls, 'textChars'),
  textTokens: sum(calls, 'textTokens'),
  structuredChars: sum(calls, 'structuredChars'),
  structuredTokens: sum(calls, 'structuredTokens'),
  images: sum(calls, 'images'),
  imageBytes: sum(calls, 'imageBytes'),
  meter: meterOf(calls) ?? null,
});
writeFileSync(
  file,
  `${JSON.stringify(
    {
      date: new Date().toISOString(),
      label,
      checkout: { cwd: process.cwd(), commit, dirtySrc: dirty },
      runtime,
      image,
      listing,
      total: totals(all),
      tasks: rows.map((r) => ({
        id: r.id,
        name: r.name,
        ...(r.skipped ? { skipped: r.skipped } : {}),
        ...(r.failed ? { failed: r.failed } : {}),
        ...totals(r.calls),
        perCall: r.calls,
      })),
    },
    null,
    2,
  )}\n`,
);
console.log(`\nFigures written to ${file}`);

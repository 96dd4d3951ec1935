// What the model is handed over the eight agent tasks (test/helpers/agent-tasks.ts): per
// task, the number of run_python calls and the characters and o200k tokens of what comes back,
// both as text content (what most clients read) and as the JSON of structuredContent (what VS
// Code hands the model), images apart; plus the listing's tokens. Prints a table and writes the
// figures to bench/results/agent-tasks-LABEL.json.
//
// It measures the bridge of the checkout it runs in (dist/cli.js and node_modules under the
// current directory), so that another checkout can be measured with this script:
//   node esbuild.mjs && node bench/agent-tasks.ts [--label after] [--calls]
//   cd OTHER-CHECKOUT && node esbuild.mjs && node PATH/TO/THIS/bench/agent-tasks.ts --label before
// Runtime: the first of CEM_TEST_RUNTIMES (default podman); image: CEM_TEST_IMAGE.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { encode } from 'gpt-tokenizer';
import { modelListing, runTask, startTaskBench, TASKS, type CallRecord } from '../test/helpers/agent-tasks.ts';

const { values } = parseArgs({ options: { label: { type: 'string', default: 'latest' }, calls: { type: 'boolean', default: false } } });
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
  };
}

const sum = (calls: CallFigures[], key: keyof Omit<CallFigures, 'label' | 'status'>) => calls.reduce((n, c) => n + c[key], 0);
const int = (n: number) => n.toLocaleString('en-US');

const bench = await startTaskBench(runtime, image);
const rows: { id: number; name: string; calls: CallFigures[] }[] = [];
try {
  for (const task of TASKS) {
    const agent = await runTask(task, bench);
    rows.push({ id: task.id, name: task.name, calls: agent.calls.map(figuresOf) });
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

console.log(`\nWhat the model is handed over the eight agent tasks (${label}; ${checkout}; ${runtime}; o200k tokens)\n`);
console.log('| task | run_python calls | text: chars / tokens | structuredContent JSON: chars / tokens | images (KB) |');
console.log('|---|---|---|---|---|');
for (const row of rows) {
  const c = row.calls;
  console.log(
    `| ${row.id} ${row.name} | ${c.length} (${c.map((x) => x.label).join(', ')}) | ${int(sum(c, 'textChars'))} / ${int(sum(c, 'textTokens'))} | ` +
      `${int(sum(c, 'structuredChars'))} / ${int(sum(c, 'structuredTokens'))} | ${sum(c, 'images')} (${int(Math.round(sum(c, 'imageBytes') / 1024))}) |`,
  );
}
const all = rows.flatMap((r) => r.calls);
console.log(
  `| **all** | **${all.length}** | **${int(sum(all, 'textChars'))} / ${int(sum(all, 'textTokens'))}** | ` +
    `**${int(sum(all, 'structuredChars'))} / ${int(sum(all, 'structuredTokens'))}** | ${sum(all, 'images')} (${int(Math.round(sum(all, 'imageBytes') / 1024))}) |`,
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
  console.log('\n| task | call | status | text chars / tokens | structured chars / tokens | images |');
  console.log('|---|---|---|---|---|---|');
  for (const row of rows) {
    for (const c of row.calls) {
      console.log(
        `| ${row.id} | ${c.label} | ${c.status} | ${int(c.textChars)} / ${int(c.textTokens)} | ${int(c.structuredChars)} / ${int(c.structuredTokens)} | ${c.images} |`,
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
      tasks: rows.map((r) => ({ id: r.id, name: r.name, ...totals(r.calls), perCall: r.calls })),
    },
    null,
    2,
  )}\n`,
);
console.log(`\nFigures written to ${file}`);

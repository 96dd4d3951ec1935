// Runs test files a few at a time, the longest first, each in a Node test runner of its own.
// Node's runner given many files starts them in name order, so a long file that sorts late (the
// package builds) started when most others were done and ran alone at the end. The order comes
// from test/file-times.json (seconds per file, as the end of a run prints them); a file not
// listed there counts as long, so a new file is timed early rather than last. Each file's report
// is printed whole when it ends, so the reports of files running side by side do not interleave;
// what failed is printed again at the end.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const TIMES = join(import.meta.dirname, 'file-times.json');

/** Seconds per file from the committed table; an unreadable table orders by name. */
function knownTimes() {
  try {
    const table = JSON.parse(readFileSync(TIMES, 'utf8'));
    return typeof table === 'object' && table !== null ? table : {};
  } catch {
    return {};
  }
}

/** The runner's summary figure `name` (e.g. "pass") in a file's report, or 0. */
function figure(report, name) {
  const match = new RegExp(`^ℹ ${name} (\\d+)$`, 'm').exec(report);
  return match ? Number(match[1]) : 0;
}

/** Runs one file; resolves to its report, exit status and seconds. */
function runFile(file, env) {
  const started = performance.now();
  const child = spawn(process.execPath, ['--test', '--test-reporter=spec', file], { stdio: ['ignore', 'pipe', 'pipe'], env });
  const chunks = [];
  child.stdout.on('data', (chunk) => chunks.push(chunk));
  child.stderr.on('data', (chunk) => chunks.push(chunk));
  return new Promise((done) => {
    const end = (status) => done({ file, status, seconds: (performance.now() - started) / 1000, report: Buffer.concat(chunks).toString() });
    child.on('error', (error) => {
      chunks.push(Buffer.from(`${error.message}\n`));
      end(1);
    });
    child.on('close', (code) => end(code ?? 1));
  });
}

/** Runs `files`, `concurrency` at a time, the longest first; resolves to 0 when every file passed. */
export async function runFiles(files, concurrency, env) {
  if (files.length === 0) return 0;
  const times = knownTimes();
  const guess = Math.max(0, ...Object.values(times).filter((t) => typeof t === 'number'));
  const queue = [...files].sort((a, b) => (times[key(b)] ?? guess) - (times[key(a)] ?? guess) || a.localeCompare(b));
  const results = [];
  const worker = async () => {
    for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
      const result = await runFile(file, env);
      process.stdout.write(`\n▶▶ ${file} (${result.seconds.toFixed(1)} s, exit ${result.status})\n${result.report}`);
      results.push(result);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, files.length) }, worker));
  const failed = results.filter((r) => r.status !== 0);
  const total = (name) => results.reduce((n, r) => n + figure(r.report, name), 0);
  // The same summary lines as one runner prints, over every file; then each file's time.
  process.stdout.write(
    `\nℹ files ${results.length}\nℹ tests ${total('tests')}\nℹ pass ${total('pass')}\nℹ fail ${total('fail')}\n` +
      `ℹ cancelled ${total('cancelled')}\nℹ skipped ${total('skipped')}\n`,
  );
  const timing = Object.fromEntries(results.sort((a, b) => b.seconds - a.seconds).map((r) => [key(r.file), Math.round(r.seconds)]));
  process.stdout.write(`ℹ seconds per file, side by side: ${JSON.stringify(timing)}\n`);
  // Each failed file's failures again at the very end, where a reader of a long log looks first.
  for (const r of failed) process.stdout.write(`✖ ${r.file} failed (exit ${r.status})\n${failures(r.report)}\n`);
  return failed.length > 0 ? 1 : 0;
}

/** The part of a report that says what failed: the runner's "failing tests" section, else its last lines; at most 8,000 characters. */
function failures(report) {
  const at = report.lastIndexOf('✖ failing tests:');
  const part = at >= 0 ? report.slice(at) : report.split('\n').slice(-40).join('\n');
  return part.length > 8_000 ? `${part.slice(0, 8_000)}\n… (${part.length - 8_000} more characters in the file's report above)` : part;
}

/** A file's name in the table: its path from the repository, with forward slashes. */
function key(file) {
  return file.split('\\').join('/');
}

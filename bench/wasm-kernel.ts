// Figures of the WebAssembly kernel as a process (Pyodide in Deno, no permissions), beside
// Pyodide loaded in this Node process as the baseline: cold start to `ready` (from the
// interpreter snapshot, as the product starts, and from scratch), a warm print(1) round trip, a
// request round trip, a restart, and memory. Run alone: `node bench/wasm-kernel.ts [n]`.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { pyodideDir } from '../src/sandbox/wasm/command.ts';
import { interpreterSnapshot } from '../src/sandbox/wasm/snapshot.ts';
import { wasmKernelSource } from '../src/sandbox/wasm/source.ts';
import { WasmKernel } from '../test/helpers/wasm-kernel.ts';
import { ms, summarize, timeEach, type Summary } from './stats.ts';

export interface WasmKernelRow {
  /** From the interpreter snapshot (snapshot.ts), as the product starts. */
  coldStart: Summary;
  /** CPU seconds the process used up to `ready` (user + system): what a loaded machine stretches. */
  startCpuSeconds: number;
  /** With no snapshot: the first start on a machine, or when it cannot be made. */
  coldStartFromScratch: Summary;
  startCpuSecondsFromScratch: number;
  warmPrint: Summary;
  /** A run making one synchronous request to the host, answered at once. */
  requestRun: Summary;
  restart: Summary;
  /** With --spare, given the spare time to start (a cold start's time) before each restart. */
  restartWithSpare: Summary;
  rssWithSpareMb: number;
  rssAfterStartMb: number;
  rssAfterRunsMb: number;
  /** Pyodide loaded in-process (Node), measured in a child Node process now. */
  inProcess: { loadMs: number; printMs: number; rssMb: number };
}

function statusMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Math.round(Number(match[1]) / 1024) : Number.NaN;
}

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (100 Hz)
}

async function inProcessBaseline(): Promise<WasmKernelRow['inProcess']> {
  const script = `
    const { loadPyodide } = await import(${JSON.stringify(pathToFileURL(join(pyodideDir(), 'pyodide.mjs')).href)});
    let start = performance.now();
    const py = await loadPyodide({ stdout: () => {} });
    const loadMs = performance.now() - start;
    py.runPython('print(1)');
    const samples = [];
    for (let i = 0; i < 200; i++) { start = performance.now(); py.runPython('print(1)'); samples.push(performance.now() - start); }
    samples.sort((a, b) => a - b);
    console.log(JSON.stringify({ loadMs, printMs: samples[100], rssMb: Math.round(process.memoryUsage().rss / 1048576) }));`;
  return JSON.parse(
    execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }),
  ) as WasmKernelRow['inProcess'];
}

async function spareFigures(n: number, coldStartMs: number): Promise<Pick<WasmKernelRow, 'restartWithSpare' | 'rssWithSpareMb'>> {
  const kernel = new WasmKernel({}, { spare: true });
  try {
    await kernel.ready();
    const samples: number[] = [];
    for (let i = 0; i < n; i++) {
      await new Promise((resolve) => setTimeout(resolve, coldStartMs * 1.5));
      const started = performance.now();
      const ready = kernel.next((m) => m.t === 'ready');
      kernel.send({ t: 'restart', source: '' });
      await ready;
      samples.push(performance.now() - started);
    }
    await new Promise((resolve) => setTimeout(resolve, coldStartMs * 1.5));
    return { restartWithSpare: summarize(samples), rssWithSpareMb: statusMb(kernel.child.pid!, 'VmRSS') };
  } finally {
    await kernel.close();
  }
}

/** n cold starts; the last kernel is left running. */
async function coldStarts(n: number, snapshot: string | undefined): Promise<{ starts: number[]; cpu: number; kernel: WasmKernel }> {
  const starts: number[] = [];
  let cpu = 0;
  let kernel: WasmKernel | undefined;
  for (let i = 0; i < n; i++) {
    await kernel?.close();
    const started = performance.now();
    kernel = new WasmKernel({}, { snapshot });
    await kernel.ready();
    starts.push(performance.now() - started);
    cpu += cpuSeconds(kernel.child.pid!);
  }
  return { starts, cpu: cpu / n, kernel: kernel! };
}

export async function wasmKernelFigures(n: number): Promise<WasmKernelRow> {
  wasmKernelSource();
  const scratch = await coldStarts(n, undefined);
  await scratch.kernel.close();
  const snapshot = await interpreterSnapshot();
  if (!snapshot) throw new Error('the interpreter snapshot could not be made (see the message above)');
  const { starts, cpu: startCpu, kernel: k } = await coldStarts(n, snapshot);
  try {
    const rssAfterStartMb = statusMb(k.child.pid!, 'VmRSS');
    await k.run('print(1)');
    const warmPrint = summarize(await timeEach(Math.max(50, n * 20), () => k.run('print(1)')));
    const requestRun = summarize(
      await timeEach(Math.max(50, n * 20), () => k.run('import sandbox_host\nsandbox_host.request_sync("ping")')),
    );
    const restart = summarize(
      await timeEach(n, async () => {
        const ready = k.next((m) => m.t === 'ready');
        k.send({ t: 'restart', source: '' });
        await ready;
      }),
    );
    const rssAfterRunsMb = statusMb(k.child.pid!, 'VmRSS');
    const { restartWithSpare, rssWithSpareMb } = await spareFigures(n, summarize(starts).p50);
    return {
      coldStart: summarize(starts),
      startCpuSeconds: startCpu,
      coldStartFromScratch: summarize(scratch.starts),
      startCpuSecondsFromScratch: scratch.cpu,
      warmPrint,
      requestRun,
      restart,
      restartWithSpare,
      rssWithSpareMb,
      rssAfterStartMb,
      rssAfterRunsMb,
      inProcess: await inProcessBaseline(),
    };
  } finally {
    await k.close();
  }
}

export function printWasmKernel(row: WasmKernelRow): void {
  const line = (what: string, s: Summary) =>
    console.log(`  ${what.padEnd(34)} p50 ${ms(s.p50).padStart(9)}  p95 ${ms(s.p95).padStart(9)}  (n=${s.n})`);
  console.log('WebAssembly kernel process (Pyodide in Deno, no permissions)');
  line('cold start to ready (snapshot)', row.coldStart);
  console.log(`  ${'CPU to ready (snapshot)'.padEnd(34)} ${row.startCpuSeconds.toFixed(2)} s`);
  line('cold start to ready, from scratch', row.coldStartFromScratch);
  console.log(`  ${'CPU to ready, from scratch'.padEnd(34)} ${row.startCpuSecondsFromScratch.toFixed(2)} s`);
  line('warm print(1) exec -> done', row.warmPrint);
  line('run with one host request', row.requestRun);
  line('restart to ready', row.restart);
  line('restart to ready, spare kept', row.restartWithSpare);
  console.log(`  ${'RSS after start / after runs'.padEnd(34)} ${row.rssAfterStartMb} MB / ${row.rssAfterRunsMb} MB`);
  console.log(`  ${'RSS with a spare interpreter'.padEnd(34)} ${row.rssWithSpareMb} MB`);
  console.log('Pyodide in this Node process (no isolation), now, for comparison');
  console.log(`  load ${ms(row.inProcess.loadMs)}, warm print(1) ${ms(row.inProcess.printMs)}, RSS ${row.inProcess.rssMb} MB`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  printWasmKernel(await wasmKernelFigures(Number(process.argv[2] ?? 5)));
}

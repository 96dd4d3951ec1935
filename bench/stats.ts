// Small statistics helpers for the benchmarks.
export function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

export interface Summary {
  n: number;
  p50: number;
  p95: number;
  min: number;
}

export function summarize(samples: number[]): Summary {
  return { n: samples.length, p50: percentile(samples, 50), p95: percentile(samples, 95), min: Math.min(...samples) };
}

export async function timeEach(n: number, fn: (i: number) => Promise<unknown>): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    await fn(i);
    samples.push(performance.now() - start);
  }
  return samples;
}

export const ms = (value: number): string => (Number.isFinite(value) ? `${value.toFixed(value < 10 ? 2 : 0)} ms` : 'n/a');

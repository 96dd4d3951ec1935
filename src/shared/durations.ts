// Times in words, two ways on purpose: how long something took, for a person scanning runs
// (whole units, the finer one dropped as it grows), and a wait or timeout in seconds, for an
// error message (tenths kept, so "1.5 s" is not told as "2 s"). A configured time ("10 min",
// sandbox.idleSeconds) is said by the sandbox's spokenSeconds, in the units it was set in.

/** How long something took: "420 ms", "1.2 s", "12 s", "2 min 5 s"; empty when unknown. */
export function formatDuration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms) || ms < 0) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 10_000) return `${(Math.floor(ms / 100) / 10).toFixed(1)} s`;
  if (ms < 60_000) return `${Math.floor(ms / 1000)} s`;
  const seconds = Math.floor(ms / 1000);
  return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

/** A wait or timeout in seconds, to the tenth: "1.5 s", "30 s". */
export function secondsText(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

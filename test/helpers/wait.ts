// Waiting in tests: a pause, a bounded wait that proves an absence where nothing else can, and
// polling until something holds (or failing with what was awaited).

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A bounded wait to see that something does NOT happen, only where no later event can show it
 * (nothing that must come after it can be awaited instead); each use says why.
 */
export const quietFor = (ms: number) => sleep(ms);

/** Polls `probe` (which may be async) every 50 ms until it gives a value (not undefined or false); fails after `ms`. */
export async function until<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

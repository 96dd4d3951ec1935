// The clock and timers that time windows and limits read: the real ones by default, a driven one
// in tests, so that a test of a window moves time on rather than waiting for it to pass.

export interface Clock {
  /** Milliseconds from an arbitrary start, never going back (performance.now()). */
  now(): number;
  setTimeout(fire: () => void, ms: number): ClockTimer;
  setInterval(fire: () => void, ms: number): ClockTimer;
  /** Clears a timeout or an interval. */
  clearTimeout(timer: ClockTimer | undefined): void;
}

/** A pending timer; `unref` lets the process exit while it waits. */
export interface ClockTimer {
  unref?(): unknown;
}

export const realClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fire, ms) => setTimeout(fire, ms),
  setInterval: (fire, ms) => setInterval(fire, ms),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout | undefined),
};

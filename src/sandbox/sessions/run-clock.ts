// A run's time limit, with pauses that do not count while the host waits on the code's behalf.
import { realClock, type Clock, type ClockTimer } from '../../shared/clock.ts';

/** At most this much of a run's time goes uncounted in untimed() waits (the longest connect timeout). */
export const MAX_UNTIMED_MS = 600_000;

/**
 * A run's time limit, which can be paused while the host waits on the code's behalf: nested
 * and concurrent pauses count once, and at most `budgetMs` in all goes uncounted.
 */
export class RunClock {
  /** Time paused so far (not counted against the limit). */
  untimedMs = 0;
  private leftMs: number;
  private budgetMs: number;
  private since: number;
  private timer: ClockTimer | undefined;
  /** Waits in progress; the clock stands still while there is one. */
  private pauses = 0;
  private stopped = false;
  private readonly onTimeout: () => void;
  /** The time and timers read (tests drive them). */
  private readonly clock: Clock;

  constructor(limitMs: number, onTimeout: () => void, budgetMs = MAX_UNTIMED_MS, clock: Clock = realClock) {
    this.leftMs = limitMs;
    this.budgetMs = budgetMs;
    this.onTimeout = onTimeout;
    this.clock = clock;
    this.since = clock.now();
    this.arm();
  }

  async untimed<T>(work: Promise<T>): Promise<T> {
    if (this.stopped) return work;
    if (this.pauses === 0) this.book();
    this.pauses++;
    if (this.pauses === 1) this.arm();
    try {
      return await work;
    } finally {
      this.book();
      this.pauses--;
      if (!this.stopped) this.arm();
    }
  }

  stop(): void {
    this.stopped = true;
    this.clock.clearTimeout(this.timer);
  }

  /** Books the time since the last booking: counted, or uncounted while paused (up to the budget). */
  private book(): void {
    const now = this.clock.now();
    const elapsed = now - this.since;
    this.since = now;
    const free = this.pauses > 0 ? Math.min(elapsed, this.budgetMs) : 0;
    this.budgetMs -= free;
    this.untimedMs += free;
    this.leftMs = Math.max(0, this.leftMs - (elapsed - free));
  }

  /** While paused the clock stands still until the budget is spent, then runs again. */
  private arm(): void {
    this.clock.clearTimeout(this.timer);
    const ms = this.pauses > 0 ? this.leftMs + this.budgetMs : this.leftMs;
    this.timer = this.clock.setTimeout(() => {
      this.stopped = true;
      this.onTimeout();
    }, ms);
  }
}

// A clock that tests drive: time stands still until `advance` moves it, and the timers due by
// then fire in order. For classes that take a Clock (src/shared/clock.ts).
import type { Clock, ClockTimer } from '../../src/shared/clock.ts';

interface Pending extends ClockTimer {
  at: number;
  fire: () => void;
  /** An interval's period; a timeout has none. */
  every?: number;
}

export class FakeClock implements Clock {
  private time = 0;
  private readonly pending = new Set<Pending>();

  now(): number {
    return this.time;
  }

  setTimeout(fire: () => void, ms: number): ClockTimer {
    const timer: Pending = { at: this.time + Math.max(0, ms), fire, unref: () => timer };
    this.pending.add(timer);
    return timer;
  }

  setInterval(fire: () => void, ms: number): ClockTimer {
    const timer: Pending = { at: this.time + Math.max(1, ms), fire, every: Math.max(1, ms), unref: () => timer };
    this.pending.add(timer);
    return timer;
  }

  clearTimeout(timer: ClockTimer | undefined): void {
    this.pending.delete(timer as Pending);
  }

  /** Moves time on by `ms`, firing each timer due on the way at its own time. */
  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      const next = [...this.pending].filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!next) break;
      this.pending.delete(next);
      this.time = next.at;
      if (next.every !== undefined) {
        next.at += next.every;
        this.pending.add(next);
      }
      next.fire();
    }
    this.time = end;
  }

  /** Timers still waiting. */
  get waiting(): number {
    return this.pending.size;
  }
}

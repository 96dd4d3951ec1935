// What a proxied server sends besides answers, passed on at a bounded rate: its log messages
// (at most MAX_SERVER_LOGS_PER_SECOND a second, then how many were dropped, said when the second
// ends), and the bridge's own note that it floods notifications (at most every DROP_LOG_MS).
import { realClock, type Clock, type ClockTimer } from '../../shared/clock.ts';
import type { ServerLogMessage } from './link.ts';

/** Log messages of one server relayed per second at most (the rest are counted, then said). */
const MAX_SERVER_LOGS_PER_SECOND = 10;
/** How often dropped notifications are reported in the log. */
const DROP_LOG_MS = 10_000;

/**
 * A server's log messages, relayed at most MAX_SERVER_LOGS_PER_SECOND; how many were dropped is
 * said once the second is over, whether or not more come (a burst that ends is still counted).
 */
export class ServerLogLimiter {
  private readonly name: string;
  private readonly clock: Clock;
  private window = { start: -Infinity, count: 0, dropped: 0 };
  private sink: ((message: ServerLogMessage) => void) | undefined;
  private flush: ClockTimer | undefined;

  constructor(name: string, clock: Clock = realClock) {
    this.name = name;
    this.clock = clock;
  }

  pass(message: ServerLogMessage, sink: (message: ServerLogMessage) => void): void {
    this.sink = sink;
    const now = this.clock.now();
    if (now - this.window.start >= 1000) {
      this.sayDropped();
      this.window = { start: now, count: 0, dropped: 0 };
    }
    if (this.window.count >= MAX_SERVER_LOGS_PER_SECOND) {
      if (this.window.dropped++ === 0) {
        this.flush = this.clock.setTimeout(() => this.sayDropped(), this.window.start + 1000 - now);
        this.flush.unref?.();
      }
      return;
    }
    this.window.count++;
    sink(message);
  }

  /** Stops the pending note (the server's connection is closing). */
  close(): void {
    this.clock.clearTimeout(this.flush);
    this.flush = undefined;
  }

  private sayDropped(): void {
    this.clock.clearTimeout(this.flush);
    this.flush = undefined;
    if (this.window.dropped === 0) return;
    const dropped = this.window.dropped;
    this.window.dropped = 0;
    this.sink?.({
      level: 'warning',
      logger: 'code-execution-mode',
      data: `${dropped} log messages of server ${this.name} dropped (more than ${MAX_SERVER_LOGS_PER_SECOND} a second)`,
    });
  }
}

/** The log line saying a server sends too many notifications, at most every DROP_LOG_MS. */
export class DropNotice {
  private readonly name: string;
  private readonly maxPerSecond: number;
  private readonly log: (message: string) => void;
  private loggedAt = 0;

  constructor(name: string, maxPerSecond: number, log: (message: string) => void) {
    this.name = name;
    this.maxPerSecond = maxPerSecond;
    this.log = log;
  }

  dropped(total: number): void {
    const now = Date.now();
    if (now - this.loggedAt < DROP_LOG_MS) return;
    this.loggedAt = now;
    this.log(
      `server ${this.name}: sends more than ${this.maxPerSecond} notifications a second; ${total} dropped so far and its output paused (proxy.maxNotificationsPerSecond)`,
    );
  }
}

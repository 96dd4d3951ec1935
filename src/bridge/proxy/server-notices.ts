// What a proxied server sends besides answers, passed on at a bounded rate: its log messages
// (at most MAX_SERVER_LOGS_PER_SECOND a second, then how many were dropped), and the bridge's
// own note that it floods notifications (at most every DROP_LOG_MS).
import type { ServerLogMessage } from './link.ts';

/** Log messages of one server relayed per second at most (the rest are counted, then said). */
const MAX_SERVER_LOGS_PER_SECOND = 10;
/** How often dropped notifications are reported in the log. */
const DROP_LOG_MS = 10_000;

/** A server's log messages, relayed at most MAX_SERVER_LOGS_PER_SECOND; says how many were dropped. */
export class ServerLogLimiter {
  private readonly name: string;
  private window = { start: 0, count: 0, dropped: 0 };

  constructor(name: string) {
    this.name = name;
  }

  pass(message: ServerLogMessage, sink: (message: ServerLogMessage) => void): void {
    const now = Date.now();
    if (now - this.window.start >= 1000) {
      if (this.window.dropped > 0) {
        sink({
          level: 'warning',
          logger: 'code-execution-mode',
          data: `${this.window.dropped} log messages of server ${this.name} dropped (more than ${MAX_SERVER_LOGS_PER_SECOND} a second)`,
        });
      }
      this.window = { start: now, count: 0, dropped: 0 };
    }
    if (this.window.count >= MAX_SERVER_LOGS_PER_SECOND) {
      this.window.dropped++;
      return;
    }
    this.window.count++;
    sink(message);
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

// Refused requests of a proxied server, written to the run log without flooding it: the first
// refusal of a server in a window is written at once, the others of that window are counted and
// written as one record when it ends. A server sending a hundred requests a second thus adds two
// lines a second, and the real audit records are not rotated out of the log by them.
import { realClock, type Clock, type ClockTimer } from '../../shared/clock.ts';
import type { RelayEvent } from '../../state/run-log/writer.ts';

/** Runs named in a grouped record at most. */
const MAX_GROUP_RUNS = 50;

interface Group {
  start: number;
  count: number;
  last: RelayEvent | undefined;
  runs: Set<string>;
  timer: ClockTimer | undefined;
}

export class RefusalGroups {
  private readonly write: (event: RelayEvent) => void;
  private readonly windowMs: number;
  private readonly groups = new Map<string, Group>();
  private readonly clock: Clock;

  constructor(write: (event: RelayEvent) => void, windowMs = 1000, clock: Clock = realClock) {
    this.write = write;
    this.windowMs = windowMs;
    this.clock = clock;
  }

  /** A refusal: written now when it is the first of its server's window, else counted. */
  refused(event: RelayEvent): void {
    const now = this.clock.now();
    const group = this.groups.get(event.server);
    if (!group || now - group.start >= this.windowMs) {
      if (group) this.flush(event.server);
      this.groups.set(event.server, { start: now, count: 0, last: undefined, runs: new Set(), timer: undefined });
      this.write(event);
      return;
    }
    group.count++;
    group.last = event;
    for (const run of event.runs) if (group.runs.size < MAX_GROUP_RUNS) group.runs.add(run);
    if (!group.timer) {
      group.timer = this.clock.setTimeout(() => this.flush(event.server), Math.max(0, group.start + this.windowMs - now));
      group.timer.unref?.();
    }
  }

  /** Writes what a server's window counted (all servers' without a name). */
  flush(server?: string): void {
    for (const name of server === undefined ? [...this.groups.keys()] : [server]) {
      const group = this.groups.get(name);
      if (!group) continue;
      if (group.timer) this.clock.clearTimeout(group.timer);
      group.timer = undefined;
      const last = group.last;
      if (last && group.count > 0) {
        this.write({
          ...last,
          runs: [...group.runs],
          count: group.count,
          error: `${group.count} more request(s) of server "${name}" refused within ${this.windowMs / 1000} s; the last: ${last.error ?? ''}`,
        });
      }
      group.count = 0;
      group.last = undefined;
      group.runs.clear();
    }
  }
}

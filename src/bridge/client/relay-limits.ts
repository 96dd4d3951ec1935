// How many of a proxied server's questions (form and URL elicitations, sampling) the bridge lets
// through: a few pending at once per server, and so many per run_python run (all servers
// together). Past either, the request is refused at once rather than queued, so a flooding
// server neither piles up prompts nor holds the run. Requests that come while no run waits on
// the server count together under that server, for as long as the bridge runs.
import type { ProxyConfig } from '../../config/schema.ts';

export type RelayLimits = Pick<ProxyConfig, 'maxPendingRelaysPerServer' | 'maxRelaysPerRun'>;

/** Runs whose counts are kept; the oldest (long ended) are forgotten first. */
const MAX_COUNTED_RUNS = 4096;

export class RelayAdmission {
  private limits: RelayLimits;
  private readonly pending = new Map<string, number>();
  /** Requests relayed per run id, or per `\0server` for those outside any run. */
  private readonly counted = new Map<string, number>();

  constructor(limits: RelayLimits) {
    this.limits = limits;
  }

  setLimits(limits: RelayLimits): void {
    this.limits = limits;
  }

  /** Takes a place for one request: a release to call when it is answered, or why it is refused. */
  admit(server: string, runs: readonly string[]): { release: () => void } | { refused: string } {
    const pending = this.pending.get(server) ?? 0;
    if (pending >= this.limits.maxPendingRelaysPerServer) {
      return {
        refused: `server "${server}" already has ${pending} question(s) waiting for the user, the most the bridge relays at once (proxy.maxPendingRelaysPerServer); ask again once they are answered`,
      };
    }
    const keys = runs.length > 0 ? [...new Set(runs)] : [`\0${server}`];
    for (const key of keys) {
      if ((this.counted.get(key) ?? 0) >= this.limits.maxRelaysPerRun) {
        const whose = runs.length > 0 ? `run ${key}` : `server "${server}" outside any run`;
        return {
          refused: `${whose} already had ${this.limits.maxRelaysPerRun} elicitation or sampling requests relayed, the most the bridge relays for one run (proxy.maxRelaysPerRun)`,
        };
      }
    }
    for (const key of keys) {
      const count = (this.counted.get(key) ?? 0) + 1;
      // Re-inserted, so that the map's order is the order of last use.
      this.counted.delete(key);
      this.counted.set(key, count);
    }
    // Requests outside runs stay counted; run ids are fresh each run, so the oldest can go.
    while (this.counted.size > MAX_COUNTED_RUNS) {
      const oldest = [...this.counted.keys()].find((k) => !k.startsWith('\0'));
      if (oldest === undefined) break;
      this.counted.delete(oldest);
    }
    this.pending.set(server, pending + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        const left = (this.pending.get(server) ?? 1) - 1;
        if (left > 0) this.pending.set(server, left);
        else this.pending.delete(server);
      },
    };
  }
}

// Consent for servers that may start only once the user allows them (in VS Code: the servers a
// workspace defines). Such a server is listed, but not started, searched or called, until the
// decisions file allows the hash of its definition. The file is checked (one stat) when a gated
// server that is not allowed is needed, and every second (the poll: an allowed state is trusted
// until then), and re-read when it changed, so allowing takes effect at once and revoking within
// a second, without restarting the bridge and losing its sessions. When the bridge needs a server
// nobody has decided on, it says so in the requests file; the extension watches that file and
// asks the person, once for several servers.
import { readFileSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import type { ConsentConfig } from '../config/schema.ts';
import { realClock, type Clock, type ClockTimer } from '../shared/clock.ts';
import { ensurePrivateDirAsync, writePrivateFile } from './private-files.ts';
import type { KindedError } from '../shared/error-kinds.ts';

const hash = z.string().max(128);

/** What the extension writes: every decision the user made, by definition hash. */
const consentDecisionsSchema = z.object({
  version: z.literal(1),
  allowed: z.array(hash).max(100_000).default([]),
  denied: z.array(hash).max(100_000).default([]),
});
export type ConsentDecisions = z.infer<typeof consentDecisionsSchema>;

/** What a bridge writes when it needed servers that no decision covers. */
export const consentRequestSchema = z.object({
  version: z.literal(1),
  at: z.string(),
  pid: z.number().int(),
  servers: z.array(z.object({ name: z.string().max(64), hash })).max(1000),
});
export type ConsentRequest = z.infer<typeof consentRequestSchema>;

/** `awaiting-consent`: nobody decided yet; `declined`: the user said no. */
export type ConsentState = 'allowed' | 'awaiting-consent' | 'declined';

/** A gated server was needed; raised to sandboxed code as ToolError kind "needs-consent". */
export class ConsentNeededError extends Error implements KindedError {
  override readonly name = 'ConsentNeededError';
  readonly kind = 'needs-consent';
}

/** How often the decisions file is checked for a revocation (stops the server's process). */
const POLL_MS = 1000;
/** The same request is not written again sooner than this. */
const REQUEST_REPEAT_MS = 3000;

export class ConsentGate {
  private config: ConsentConfig | undefined;
  private readonly log: (message: string) => void;
  private seen = '';
  /** When the decisions file was last looked at (on `clock`). */
  private checkedAt = -Infinity;
  private allowed = new Set<string>();
  private denied = new Set<string>();
  private readonly states = new Map<string, ConsentState>();
  private timer: ClockTimer | undefined;
  private onCheck: ((server: string, state: ConsentState, changed: boolean) => void) | undefined;
  private lastRequest = { key: '', at: -Infinity };
  /** What the poll and the repeat window read the time from (tests drive it). */
  private readonly clock: Clock;

  constructor(config: ConsentConfig | undefined, log: (message: string) => void = () => {}, clock: Clock = realClock) {
    this.config = config;
    this.log = log;
    this.clock = clock;
  }

  /** Whether the server waits for a decision at all. */
  gated(server: string): boolean {
    return this.config?.servers[server] !== undefined;
  }

  /** The server's state now ("allowed" for every server that needs no consent). */
  state(server: string): ConsentState {
    const wanted = this.config?.servers[server];
    if (wanted === undefined) return 'allowed';
    // "allowed" holds until the next poll (several checks a request cost no stat); anything else
    // is looked at again, so that a server the user just allowed is usable at once.
    if (!this.allowed.has(wanted) || this.clock.now() - this.checkedAt >= POLL_MS) this.refresh();
    return this.known(wanted);
  }

  private known(hash: string): ConsentState {
    return this.allowed.has(hash) ? 'allowed' : this.denied.has(hash) ? 'declined' : 'awaiting-consent';
  }

  /** What sandboxed code is told about a server that is not allowed. */
  reason(server: string): string {
    return this.state(server) === 'declined'
      ? `the user did not allow server "${server}" (defined by this workspace's settings) to run; they can change that with the VS Code command "Code Execution Mode: Manage Server Consent"`
      : `server "${server}" is defined by this workspace's settings and the user has not allowed it to run yet; they have been asked in VS Code. Tell the user, and call it again once they allow it`;
  }

  /** Asks for a decision on these servers; those decided already are left out. Never throws. */
  request(servers: readonly string[]): void {
    if (!this.config) return;
    const wanted = servers.filter((s) => this.state(s) === 'awaiting-consent').sort();
    if (wanted.length === 0) return;
    const key = wanted.join('\n');
    const now = this.clock.now();
    if (key === this.lastRequest.key && now - this.lastRequest.at < REQUEST_REPEAT_MS) return;
    this.lastRequest = { key, at: now };
    const request: ConsentRequest = {
      version: 1,
      at: new Date().toISOString(),
      pid: process.pid,
      servers: wanted.map((name) => ({ name, hash: this.config!.servers[name]! })),
    };
    const file = this.config.requestsFile;
    this.log(`asking the user to allow ${wanted.map((s) => `"${s}"`).join(', ')} (defined by the workspace)`);
    void ensurePrivateDirAsync(dirname(file))
      .then(() => writePrivateFile(file, `${JSON.stringify(request)}\n`))
      .catch((error: Error) => this.log(`could not ask for consent in ${file}: ${error.message}`));
  }

  /**
   * Every second, calls `onCheck` with each gated server's state, and whether it changed since
   * the last check. Every state, not only the changes: a server can be allowed, started (on a
   * fresh read of the decisions) and revoked between two checks, which then see no change.
   */
  watch(onCheck: (server: string, state: ConsentState, changed: boolean) => void): void {
    this.onCheck = onCheck;
    if (!this.config || Object.keys(this.config.servers).length === 0 || this.timer) return;
    for (const server of Object.keys(this.config.servers)) this.states.set(server, this.state(server));
    this.timer = this.clock.setInterval(() => {
      if (!this.config) return;
      this.refresh();
      for (const [server, wanted] of Object.entries(this.config.servers)) {
        const state = this.known(wanted);
        const changed = this.states.get(server) !== state;
        this.states.set(server, state);
        onCheck(server, state, changed);
      }
    }, POLL_MS);
    this.timer.unref?.();
  }

  /** The servers that need consent changed while the bridge runs (a server added to the workspace). */
  update(config: ConsentConfig | undefined): void {
    this.config = config;
    this.seen = '';
    // A server gated from now on starts from its current state, not as a change.
    for (const server of Object.keys(config?.servers ?? {})) if (!this.states.has(server)) this.states.set(server, this.state(server));
    if (this.onCheck) this.watch(this.onCheck);
  }

  close(): void {
    this.onCheck = undefined;
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Re-reads the decisions when the file changed (the extension replaces it: a new inode). */
  private refresh(): void {
    this.checkedAt = this.clock.now();
    const file = this.config!.decisionsFile;
    let key: string;
    try {
      const stat = statSync(file);
      key = `${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}`;
    } catch {
      key = 'missing';
    }
    if (key === this.seen) return;
    this.seen = key;
    this.allowed = new Set();
    this.denied = new Set();
    if (key === 'missing') return;
    try {
      const decisions = consentDecisionsSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
      this.allowed = new Set(decisions.allowed);
      this.denied = new Set(decisions.denied);
    } catch (error) {
      // Unreadable decisions allow nothing.
      this.log(`the consent decisions in ${file} cannot be read (${(error as Error).message}); no workspace server is allowed`);
    }
  }
}

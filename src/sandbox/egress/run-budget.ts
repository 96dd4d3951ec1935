// The run that owns the proxy's requests: its handler, its signal, what it has used of the caps
// (requests, bytes both ways, connections open at once) and the connections to close when it
// ends. Counting happens synchronously at admission, so that twenty requests arriving together
// against a cap of five let exactly five through.
import type { Socket } from 'node:net';
import type { NetworkConfig } from './policy.ts';
import { cappedBytes, cappedConnections, cappedRequests, type Refusal } from './refusals.ts';
import type { EgressHandler, EgressTarget } from './types.ts';

export type Caps = Pick<NetworkConfig, 'maxRequestsPerRun' | 'maxBytesPerRun' | 'maxConnections'>;

export class EgressRun {
  private requests = 0;
  private bytes = 0;
  private open = 0;
  private readonly sockets = new Set<Socket>();
  private readonly ending = new AbortController();
  private readonly inFlight = new Set<Promise<void>>();
  /** Aborts when the run's own signal does or the run ends. */
  readonly signal: AbortSignal;

  readonly runId: string;
  readonly handler: EgressHandler | undefined;

  constructor(runId: string, handler: EgressHandler | undefined, runSignal: AbortSignal) {
    this.runId = runId;
    this.handler = handler;
    this.signal = AbortSignal.any([runSignal, this.ending.signal]);
  }

  /** Requests admitted and not yet ended (waiting for an answer, connecting, or open). */
  get openRequests(): number {
    return this.open;
  }

  get ended(): boolean {
    return this.ending.signal.aborted;
  }

  /** Counts a new request against the caps (read live from the settings), or the cap it hits. */
  admit(target: EgressTarget, caps: Caps): Refusal | undefined {
    if (this.requests >= caps.maxRequestsPerRun) return cappedRequests(target, caps.maxRequestsPerRun);
    if (this.bytes >= caps.maxBytesPerRun) return cappedBytes(target, caps.maxBytesPerRun);
    if (this.open >= caps.maxConnections) return cappedConnections(target, caps.maxConnections);
    this.requests++;
    this.open++;
    return undefined;
  }

  /** A request admitted earlier has ended: its connection no longer counts. */
  release(): void {
    this.open--;
  }

  /** Counts `count` bytes moved either way; false (and nothing counted) when they would go over the cap. */
  spend(count: number, cap: number): boolean {
    if (this.bytes + count > cap) {
      this.bytes = cap;
      return false;
    }
    this.bytes += count;
    return true;
  }

  /** A socket of this run (the sandbox's or the host's side), destroyed when the run ends. */
  hold(socket: Socket): void {
    if (this.ended) {
      socket.destroy();
      return;
    }
    // A keep-alive connection carries many requests: held once.
    if (this.sockets.has(socket)) return;
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
  }

  /** Work of this run (one request, until its record is written) that ending the run waits for. */
  track(work: Promise<void>): void {
    this.inFlight.add(work);
    const done = () => this.inFlight.delete(work);
    work.then(done, done);
  }

  /** Ends the run: pending questions and connections give up, open connections and tunnels close. */
  async end(): Promise<void> {
    this.ending.abort(new Error('the run ended'));
    for (const socket of this.sockets) socket.destroy();
    await Promise.allSettled([...this.inFlight]);
  }
}

// How sandboxed code asks the host for things during a run: the handler a run is given and what
// it gets with each request, and how a request is refused when no run in progress owns it.
import type { Kernel } from '../protocol/kernel-process.ts';
import type { KernelMessage } from '../protocol/messages.ts';

export const MAX_REQUESTS_IN_FLIGHT = 64;

/** The one request the sandbox serves itself, not the handler: refresh_workspace() in Python. */
export const REFRESH_WORKSPACE = 'refresh_workspace';

export interface RequestContext {
  runId: string;
  session: string;
  signal: AbortSignal;
  /** Adds an image to the run's result (as if the code had emitted it). */
  emitImage(mime: string, data: string): void;
  /**
   * Waits for `work` with the run's time limit paused: for waits that are not the code's doing
   * (a proxied server starting), each bounded by its own timeout. Nested and concurrent waits
   * share one pause; the time left is kept, not reset. The signal still stops the run.
   */
  untimed: <T>(work: Promise<T>) => Promise<T>;
  /** Names what this request waits for (e.g. "memory.read_graph"), for a timeout's message. */
  describe(what: string): void;
}

/** Serves a request from sandboxed code. Throwing sends the error back into Python. */
export type RequestHandler = (method: string, params: unknown, context: RequestContext) => Promise<unknown>;

/** A request the host refused unserved because no run of its own was in progress to own it. */
export interface RefusedRequest {
  /** The host's run it is recorded under: the one in progress, or the session's last. */
  run: string;
  method: string;
  params: unknown;
  reason: string;
}

/**
 * Answers a request that no run in progress owns (it came from code of a run that has ended,
 * a thread the code left behind, say), so that its caller gets an error instead of waiting for
 * ever, and tells `onRefused` so the refusal is on record.
 */
export function refuseRequest(
  container: Kernel,
  message: Extract<KernelMessage, { t: 'req' }>,
  refused: RefusedRequest,
  onRefused?: (refused: RefusedRequest) => void,
): void {
  container.send({
    t: 'res',
    id: message.id,
    ok: false,
    error: { type: 'RunEnded', kind: 'run-ended', message: `Refused: ${refused.reason}.` },
  });
  onRefused?.(refused);
}

/**
 * What a container hears between runs: a request is refused (its run has ended) and put on
 * record; a `done` means the run before forged its end and its code may still be running.
 */
export function watchBetweenRuns(
  container: Kernel,
  lastRun: string,
  onRefused: ((refused: RefusedRequest) => void) | undefined,
  onForgedEnd: (run: string) => void,
): void {
  if (!container.alive) return;
  container.on({
    message: (message) => {
      if (message.t === 'req') {
        const reason = `the call came from code of run ${message.run} after its end; calls are served only while their run is in progress`;
        refuseRequest(container, message, { run: lastRun, method: message.method, params: message.params, reason }, onRefused);
      } else if (message.t === 'done') {
        onForgedEnd(lastRun);
      }
    },
  });
}

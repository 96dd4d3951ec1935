// The one context a call made for a run carries through the bridge (host methods, the proxy,
// confirmations, relayed requests): which run and session, the signal that stops it, and how
// a wait that is not the code's doing pauses the run's clock. Taken from the sandbox's
// RequestContext, which every host method gets; calls from outside a run (the Tools view, a
// test) have no run, and a wait without a clock to pause has no `untimed`.
import type { RequestContext } from '../sandbox/index.ts';

export interface RunCall extends Pick<RequestContext, 'runId' | 'session' | 'signal'> {
  /** RequestContext.untimed: the run's time limit paused while `work` is awaited. */
  untimed?: RequestContext['untimed'];
}

/** How a wait for a server (its start, its listing, a request) goes: stopped by the signal, off the run's clock. */
export type RunWait = Partial<Pick<RunCall, 'signal' | 'untimed'>>;

// A run's request context for unit tests of the host methods: a run id, the default session, a
// signal never aborted, and no-op image, untimed and describe hooks.
import type { RequestContext } from '../../src/sandbox/sessions/run-requests.ts';

export function requestContext(runId: string): RequestContext {
  return {
    runId,
    session: 'default',
    signal: new AbortController().signal,
    emitImage: () => undefined,
    untimed: (work) => work,
    describe: () => undefined,
  };
}

// One question at a time per host and port: requests that arrive while the user is being asked
// about the same target wait for that answer instead of asking again (a script that fetches ten
// pages of one API at once asks once).
import type { EgressAnswer } from './types.ts';

export class SharedQuestions {
  private readonly pending = new Map<string, Promise<EgressAnswer>>();

  /**
   * The answer for `key`: the question already being asked for it, or a new one that `ask`
   * starts. A waiter whose `signal` aborts stops waiting (the question itself goes on for the
   * others, and its own signal is the run's).
   */
  async answer(key: string, ask: () => Promise<EgressAnswer>, signal: AbortSignal): Promise<EgressAnswer> {
    let question = this.pending.get(key);
    if (!question) {
      question = Promise.resolve().then(ask);
      this.pending.set(key, question);
      const forget = () => this.pending.delete(key);
      question.then(forget, forget);
    }
    return await untilAborted(question, signal);
  }

  /** How many questions are waiting for an answer. */
  get size(): number {
    return this.pending.size;
  }
}

/** `work`, or a rejection with the signal's reason once it aborts. */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('the run ended');
}

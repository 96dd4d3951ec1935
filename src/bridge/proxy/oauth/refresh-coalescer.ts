// One refresh per refresh token. Calls in flight when a token expires each get a 401 and each
// run the SDK's auth(), which refreshes: with rotating refresh tokens the first refresh spends
// the token, the others are refused, and the SDK then drops the tokens the first one just
// stored. So the token requests of one server go through here: a refresh with the same body as
// one in flight (or answered in the last ten seconds) gets that answer, and all callers store the
// same new tokens.
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';

const REMEMBER_MS = 10_000;
/** A refresh that takes longer fails (a stalled token endpoint must not hold every call of the server). */
const REFRESH_TIMEOUT_MS = 30_000;
/** A token response is small; a bigger one is refused, as everything else a server sends. */
const MAX_BODY_BYTES = 1024 * 1024;

interface Answer {
  status: number;
  statusText: string;
  headers: [string, string][];
  body: Uint8Array;
}

export class RefreshCoalescer {
  private readonly answers = new Map<string, { answer: Promise<Answer>; at: number }>();
  private readonly timeoutMs: number;

  constructor(timeoutMs = REFRESH_TIMEOUT_MS) {
    this.timeoutMs = timeoutMs;
  }

  wrap(base: FetchLike): FetchLike {
    return async (url, init) => {
      const key = refreshKey(url, init);
      if (!key) return base(url, init);
      this.prune();
      let entry = this.answers.get(key);
      if (!entry) {
        // Shared by every caller: bounded by its own clock, not by the first caller's signal.
        const signal = AbortSignal.timeout(this.timeoutMs);
        const answer = bounded(
          base(url, { ...init, signal }).then(readAnswer),
          signal,
          () => new Error(`the token endpoint did not answer the refresh within ${Math.round(this.timeoutMs / 1000)} s`),
        );
        entry = { answer, at: Date.now() };
        this.answers.set(key, entry);
        // A refusal or failure is not remembered: only an answer that gave tokens is reused.
        answer.then(
          (a) => {
            if (a.status < 200 || a.status > 299) this.answers.delete(key);
          },
          () => this.answers.delete(key),
        );
      }
      const answer = await entry.answer;
      return new Response(answer.body.slice(), { status: answer.status, statusText: answer.statusText, headers: answer.headers });
    };
  }

  private prune(): void {
    const now = Date.now();
    for (const [key, entry] of this.answers) if (now - entry.at > REMEMBER_MS) this.answers.delete(key);
  }
}

/** The work, or a rejection once the signal fires (also for a fetch that ignores it). */
function bounded<T>(work: Promise<T>, signal: AbortSignal, error: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(error());
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** "url + body" of a refresh_token grant; undefined for any other request. */
function refreshKey(url: string | URL, init: RequestInit | undefined): string | undefined {
  if (init?.method !== 'POST') return undefined;
  const body = init.body;
  const text = body instanceof URLSearchParams ? body.toString() : typeof body === 'string' ? body : undefined;
  if (!text || new URLSearchParams(text).get('grant_type') !== 'refresh_token') return undefined;
  return `${String(url)}\n${text}`;
}

async function readAnswer(response: Response): Promise<Answer> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (response.body) {
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > MAX_BODY_BYTES) {
        await reader.cancel();
        throw new Error(`the token endpoint's answer is over ${MAX_BODY_BYTES} bytes`);
      }
      chunks.push(value);
    }
  }
  const body = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  const headers: [string, string][] = [];
  response.headers.forEach((value, name) => headers.push([name, value]));
  return { status: response.status, statusText: response.statusText, headers, body };
}

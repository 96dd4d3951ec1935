// The loopback redirect of the browser step (RFC 8252): an HTTP listener on 127.0.0.1 that
// takes exactly one authorization response whose `state` matches, then closes. A request with
// another state (or none) is refused and the wait goes on: only the browser that was sent
// there can end it. Nothing of the request is echoed back into the page.
import type { Server } from 'node:http';
import { http } from '../../../shared/http-module.ts';
import { timingSafeEqual } from 'node:crypto';

const CALLBACK_PATH = '/callback';

export class SignInError extends Error {
  override readonly name = 'SignInError';
}

export interface CallbackListener {
  readonly port: number;
  readonly redirectUrl: string;
  /** The authorization code, once the right callback arrived; rejects on timeout, error or close. */
  readonly code: Promise<string>;
  close(): void;
}

const PAGE_OK =
  '<!doctype html><meta charset="utf-8"><title>Signed in</title><p>Signed in. You can close this tab and return to your editor.</p>';
const PAGE_FAILED =
  '<!doctype html><meta charset="utf-8"><title>Sign-in failed</title><p>The sign-in did not complete. Return to your editor to try again.</p>';
const PAGE_REFUSED =
  '<!doctype html><meta charset="utf-8"><title>Refused</title><p>This sign-in response does not belong to a sign-in in progress.</p>';

/** Listens on 127.0.0.1:`port` (0: any free port) for the callback carrying `state`, for at most `timeoutMs`. */
export async function listenForCallback(
  port: number,
  expectedState: () => string | undefined,
  timeoutMs: number,
): Promise<CallbackListener> {
  const server: Server = http.createServer();
  let settle: { resolve: (code: string) => void; reject: (error: Error) => void } | undefined;
  const code = new Promise<string>((resolve, reject) => (settle = { resolve, reject }));
  code.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const finish = (error: Error | undefined, value?: string) => {
    const s = settle;
    settle = undefined;
    clearTimeout(timer);
    server.close();
    server.closeAllConnections?.();
    if (!s) return;
    if (error) s.reject(error);
    else s.resolve(value ?? '');
  };
  server.on('request', (req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const send = (status: number, page: string) => {
      res.writeHead(status, {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        'content-security-policy': "default-src 'none'",
      });
      res.end(page);
    };
    if (req.method !== 'GET' || url.pathname !== CALLBACK_PATH) return send(404, PAGE_REFUSED);
    const wanted = expectedState();
    const state = url.searchParams.get('state');
    if (!settle || !wanted || !state || !sameText(state, wanted)) return send(400, PAGE_REFUSED);
    const error = url.searchParams.get('error');
    const got = url.searchParams.get('code');
    if (error || !got) {
      send(400, PAGE_FAILED);
      // The authorization server's words are short codes; anything else is cut.
      finish(
        new SignInError(`the sign-in was not completed: ${(error ?? 'no code in the response').replace(/[^\w.-]/g, '').slice(0, 64)}`),
      );
      return;
    }
    send(200, PAGE_OK);
    finish(undefined, got);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  timer = setTimeout(() => finish(new SignInError(`no sign-in arrived within ${Math.round(timeoutMs / 1000)} s`)), timeoutMs);
  timer.unref();
  server.unref();
  return {
    port: bound,
    redirectUrl: redirectUrlFor(bound),
    code,
    close: () => finish(new SignInError('the sign-in was cancelled')),
  };
}

export function redirectUrlFor(port: number): string {
  return `http://127.0.0.1:${port}${CALLBACK_PATH}`;
}

/**
 * Whether a bridge's own callback listener holds the port (another window waiting for the same
 * sign-in): it answers a request without state with its refusal page. Anything else (no answer
 * within a second, another page) is not ours.
 */
export async function isOurCallback(port: number): Promise<boolean> {
  try {
    const answer = await fetch(`${redirectUrlFor(port)}?probe=1`, { signal: AbortSignal.timeout(1000), redirect: 'manual' });
    const text = (await answer.text()).slice(0, 4096);
    return answer.status === 400 && text === PAGE_REFUSED;
  } catch {
    return false;
  }
}

/** A port free now on 127.0.0.1 (for the redirect URI registered before the listener starts). */
export async function freePort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (typeof address !== 'object' || !address) throw new Error('no free loopback port');
  return address.port;
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

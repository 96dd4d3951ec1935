// A plain-HTTP request through the proxy (`GET http://host/path`), passed on in origin form over
// a connection the proxy opened to a checked address: hop-by-hop headers dropped, the upstream
// connection closed after the one response, every byte counted against the run's byte cap.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { http } from '../../shared/http-module.ts';
import type { Socket } from 'node:net';
import type { Meter } from './tunnel.ts';

/** Headers that describe one hop, not the request (RFC 9110 7.6.1), and the proxy's own. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  // The proxy's server answered "100 Continue" already.
  'expect',
]);

/** A raw header list (name, value, name, value...) without hop-by-hop headers and those `Connection` names. */
export function endToEndHeaders(raw: readonly string[]): string[] {
  const named = new Set<string>();
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]?.toLowerCase() === 'connection') for (const token of (raw[i + 1] ?? '').split(',')) named.add(token.trim().toLowerCase());
  }
  const kept: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] ?? '';
    const lower = name.toLowerCase();
    if (!HOP_BY_HOP.has(lower) && !named.has(lower)) kept.push(name, raw[i + 1] ?? '');
  }
  return kept;
}

export interface Forwarding {
  req: IncomingMessage;
  res: ServerResponse;
  /** The origin-form target (`/path?query`). */
  path: string;
  /** The Host header: the URL's host and port (without port 80). */
  host: string;
  /** Connected to the checked address. */
  socket: Socket;
  meter: Meter;
}

/**
 * Sends the request upstream and its response back. Resolves once both are over: "ended",
 * "capped" when the byte cap cut it, or an Error when the host failed before answering (the
 * caller answers 502; a failure after the response began just ends the response).
 */
export function forward({ req, res, path, host, socket, meter }: Forwarding): Promise<'ended' | 'capped' | Error> {
  return new Promise((resolve) => {
    let outcome: 'ended' | 'capped' | Error | undefined;
    const done = (value: 'ended' | 'capped' | Error) => {
      outcome ??= value;
      resolve(outcome);
    };
    // The URL names the host; a Host header of the sandbox's is ignored (RFC 9112 3.2.2).
    const headers = endToEndHeaders(req.rawHeaders).filter((_, i, all) => all[i - (i % 2)]?.toLowerCase() !== 'host');
    headers.push('Host', host, 'Connection', 'close');
    // A body of unknown length goes on chunked (node frames it; whatever the method).
    if (req.headers['transfer-encoding'] !== undefined && req.headers['content-length'] === undefined)
      headers.push('Transfer-Encoding', 'chunked');
    const upstream = http.request({ createConnection: () => socket, method: req.method ?? 'GET', path, headers, setHost: false });
    const cut = () => {
      outcome ??= 'capped';
      socket.destroy();
      upstream.destroy();
    };
    socket.prependListener('data', (chunk: Buffer) => {
      if (!meter('in', chunk.length)) cut();
    });
    req.on('data', (chunk: Buffer) => {
      if (!meter('out', chunk.length)) cut();
    });
    let failure: Error | undefined;
    let answer: IncomingMessage | undefined;
    upstream.on('response', (response: IncomingMessage) => {
      if (outcome !== undefined || res.destroyed) return;
      answer = response;
      res.writeHead(response.statusCode ?? 502, response.statusMessage, endToEndHeaders(response.rawHeaders));
      response.pipe(res);
      response.on('error', () => res.destroy());
    });
    // The sandbox's side closes (the response is complete, or the sandbox went away): over.
    res.on('close', () => {
      socket.destroy();
      if (!answer) upstream.destroy();
      else done(answer.complete ? 'ended' : (failure ?? new Error('the response ended early')));
    });
    upstream.on('error', (error) => {
      failure ??= error;
      if (answer) res.destroy();
    });
    upstream.on('close', () => {
      if (!answer) done(failure ?? new Error('the host closed the connection without an answer'));
    });
    req.pipe(upstream);
  });
}

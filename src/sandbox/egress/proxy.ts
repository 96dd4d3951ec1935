// The sandbox's only way out: an HTTP/1.1 proxy on a unix socket (mounted into the container).
// `CONNECT host:port` becomes a tunnel (TLS passes through untouched); `GET http://host/path` is
// forwarded. Each request belongs to the run in progress, is checked against sandbox.network
// (read at each request, so a changed setting applies at once) before and after the host
// resolves its name, may be asked about, counts against the run's caps, and is recorded once
// it ends.
import { chmod, lstat, rm } from 'node:fs/promises';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { http } from '../../shared/http-module.ts';
import { isIP, type Socket } from 'node:net';
import { Exchange } from './exchange.ts';
import { forward } from './forward.ts';
import { ProxyGrants } from './grants.ts';
import { allowPatterns, forbiddenAddress, grantKey, listing, type NetworkConfig } from './policy.ts';
import { SharedQuestions } from './questions.ts';
import {
  cappedBytes,
  failed,
  noRun,
  notAsked,
  notListed,
  oneLine,
  specialAddress,
  statusText,
  userDenied,
  type Refusal,
} from './refusals.ts';
import { EgressRun } from './run-budget.ts';
import { absoluteTarget, connectTarget, targetText } from './target.ts';
import type { Meter } from './tunnel.ts';
import { relay } from './tunnel.ts';
import type { EgressHandler, EgressTarget } from './types.ts';
import { addressesOf, connectFirst, defaultConnect, defaultLookup, type EgressConnect, type EgressLookup } from './upstream.ts';

export interface EgressProxyOptions {
  /** Where to listen; the caller owns the directory. The socket is made 0666, for the container's user. */
  socketPath: string;
  /** sandbox.network, read at each request. */
  network: () => NetworkConfig;
  /** The session the proxy serves (one proxy per session). */
  session: string;
  /** Resolves names (dns.promises.lookup with all: true by default). */
  lookup?: EgressLookup;
  /** Connects to a checked address (net.connect by default). */
  connect?: EgressConnect;
}

/** Request headers larger than this are refused (400). */
export const MAX_HEADER_BYTES = 16 * 1024;
/** Connections from the sandbox to the proxy at once (idle keep-alive ones too), whatever the caps. */
const MAX_CLIENT_CONNECTIONS = 1024;

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A whole HTTP response written on a raw socket: for CONNECT and malformed requests, which have no ServerResponse. */
function rawResponse(status: number, title: string, reason: string): string {
  const body = `${reason}\n`;
  return (
    `HTTP/1.1 ${status} ${statusText(reason) || title}\r\n` +
    `Content-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}

/** How long a refused connection may stay open after its answer, for the sandbox to read it. */
const LINGER_MS = 5_000;

/** Answers on a raw socket and closes it: at once when the sandbox closes its side, else after a short linger. */
function answerRaw(socket: Socket, status: number, title: string, reason: string): void {
  socket.resume();
  socket.end(rawResponse(status, title, reason));
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}

function respond(res: ServerResponse, status: number, reason: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = `${reason}\n`;
  res.writeHead(status, statusText(reason), {
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    Connection: 'close',
  });
  res.end(body);
}

type Opened = { socket: Socket; address: string } | Refusal;

export class EgressProxy {
  private readonly server: Server;
  private readonly questions = new SharedQuestions();
  /** host:port allowed by an answer "session" (for the proxy's life) or "always" (until sandbox.network changes). */
  private readonly grants = new ProxyGrants();
  private readonly lookup: EgressLookup;
  private readonly connect: EgressConnect;
  private run: EgressRun | undefined;
  private closed = false;
  /** Every connection from the sandbox, tunnels included, so that close() ends them all. */
  private readonly clients = new Set<Socket>();

  private readonly options: EgressProxyOptions;

  constructor(options: EgressProxyOptions) {
    this.options = options;
    this.lookup = options.lookup ?? defaultLookup;
    this.connect = options.connect ?? defaultConnect;
    this.server = http.createServer({ maxHeaderSize: MAX_HEADER_BYTES }, (req, res) => this.onRequest(req, res));
    this.server.maxConnections = MAX_CLIENT_CONNECTIONS;
    this.server.on('connection', (socket: Socket) => {
      this.clients.add(socket);
      socket.once('close', () => this.clients.delete(socket));
    });
    this.server.on('connect', (req: IncomingMessage, socket: Socket, head: Buffer) => this.onConnect(req, socket, head));
    this.server.on('upgrade', (_req: IncomingMessage, socket: Socket) => {
      socket.on('error', () => socket.destroy());
      answerRaw(
        socket,
        400,
        'Bad Request',
        'the proxy does not forward upgrades; a WebSocket client reaches wss:// and ws:// through CONNECT',
      );
    });
    this.server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
      if (!socket.writable) return void socket.destroy();
      const reason =
        error.code === 'HPE_HEADER_OVERFLOW'
          ? `the request's headers are over ${MAX_HEADER_BYTES / 1024} KiB`
          : `not an HTTP/1.1 request the proxy understands (${oneLine(error.code ?? error.message)})`;
      answerRaw(socket, 400, 'Bad Request', reason);
    });
  }

  get socketPath(): string {
    return this.options.socketPath;
  }

  /** Requests of the run in progress admitted and not yet ended (waiting for an answer, connecting, or open). */
  get openRequests(): number {
    return this.run?.openRequests ?? 0;
  }

  /** Listens on the socket path (a stale socket left there is replaced), with mode 0666. */
  async listen(): Promise<void> {
    const { socketPath } = this.options;
    const existing = await lstat(socketPath).catch(() => undefined);
    if (existing?.isSocket()) await rm(socketPath, { force: true });
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(socketPath, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    // The container's user is not the bridge's: the socket's directory is what keeps others out.
    await chmod(socketPath, 0o666);
  }

  /**
   * A run of the session begins: requests from now on belong to it, count against fresh caps,
   * are asked about through `handler` and recorded by it. A run still in progress is ended first.
   */
  beginRun(runId: string, handler: EgressHandler | undefined, signal: AbortSignal): void {
    if (this.run) void this.run.end();
    this.run = new EgressRun(runId, handler, signal);
  }

  /**
   * The run ends: questions still open are given up (denied), its connections and tunnels are
   * closed; resolves once every request of the run has been recorded.
   */
  async endRun(): Promise<void> {
    const run = this.run;
    this.run = undefined;
    await run?.end();
  }

  /** Ends the run in progress and every connection, stops listening and removes the socket. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const ending = this.endRun();
    const stopped = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.clients) socket.destroy();
    await Promise.all([ending, stopped]);
    await rm(this.options.socketPath, { force: true });
  }

  private onConnect(req: IncomingMessage, client: Socket, head: Buffer): void {
    client.on('error', () => client.destroy());
    const target = connectTarget(req.url ?? '');
    if (typeof target === 'string') {
      answerRaw(client, 400, 'Bad Request', target);
      return;
    }
    const exchange = new Exchange(this.run, target, 'CONNECT');
    exchange.run?.hold(client);
    const work = this.tunnel(exchange, client, head).catch((error: unknown) => this.broken(exchange, client, error));
    exchange.run?.track(work);
  }

  private async tunnel(exchange: Exchange, client: Socket, head: Buffer): Promise<void> {
    const opened = await this.open(exchange);
    if ('reason' in opened) {
      exchange.refuse(opened);
      if (!client.destroyed) answerRaw(client, opened.status, 'Forbidden', opened.reason);
      exchange.finish();
      return;
    }
    const run = exchange.run;
    if (!run || client.destroyed) {
      opened.socket.destroy();
      exchange.finish();
      return;
    }
    run.hold(opened.socket);
    opened.socket.on('error', () => opened.socket.destroy());
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    const outcome = await relay(client, opened.socket, head, this.meter(exchange, run));
    if (outcome === 'capped') exchange.refuse(cappedBytes(exchange.target, this.options.network().maxBytesPerRun));
    exchange.finish();
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const parsed = absoluteTarget(req.url ?? '');
    if (typeof parsed === 'string') {
      req.resume();
      respond(res, 400, parsed);
      return;
    }
    const exchange = new Exchange(this.run, parsed.target, req.method ?? 'GET');
    exchange.run?.hold(req.socket);
    const work = this.forward(exchange, req, res, parsed.path).catch((error: unknown) => this.broken(exchange, req.socket, error));
    exchange.run?.track(work);
  }

  private async forward(exchange: Exchange, req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const opened = await this.open(exchange);
    const run = exchange.run;
    if ('reason' in opened || !run) {
      if ('reason' in opened) exchange.refuse(opened);
      else opened.socket.destroy();
      req.resume();
      if ('reason' in opened && !res.destroyed) respond(res, opened.status, opened.reason);
      exchange.finish();
      return;
    }
    const { socket } = opened;
    run.hold(socket);
    const outcome = await forward({
      req,
      res,
      path,
      host: targetText(exchange.target).replace(/:80$/, ''),
      socket,
      meter: this.meter(exchange, run),
    });
    // The request line and headers went out too: count what the socket wrote beyond the body.
    const headBytes = socket.bytesWritten - exchange.bytesOut;
    if (headBytes > 0) run.spend(headBytes, this.options.network().maxBytesPerRun);
    exchange.bytesOut = socket.bytesWritten;
    exchange.bytesIn = socket.bytesRead;
    if (outcome === 'capped') {
      const refusal = cappedBytes(exchange.target, this.options.network().maxBytesPerRun);
      exchange.refuse(refusal);
      if (!res.destroyed) respond(res, refusal.status, refusal.reason);
    } else if (outcome instanceof Error) {
      const failure = failed(exchange.target, errorText(outcome));
      exchange.refuse(failure);
      if (!res.destroyed) respond(res, failure.status, failure.reason);
    }
    exchange.finish();
  }

  /** A request that failed in a way the proxy did not foresee: its connection closes, its record says why. */
  private broken(exchange: Exchange, client: Socket, error: unknown): void {
    client.destroy();
    exchange.refuse(failed(exchange.target, `the proxy failed (${errorText(error)})`));
    exchange.finish();
  }

  /** Counts bytes against the run's cap (read live) and the request's record. */
  private meter(exchange: Exchange, run: EgressRun): Meter {
    return (direction, bytes) => {
      if (!run.spend(bytes, this.options.network().maxBytesPerRun)) return false;
      if (direction === 'out') exchange.bytesOut += bytes;
      else exchange.bytesIn += bytes;
      return true;
    };
  }

  /**
   * Decides a request and, when it may go, connects to a checked address: the run, the caps,
   * the list (or the user's answer), then every address the name resolves to.
   */
  private async open(exchange: Exchange): Promise<Opened> {
    const { run, target } = exchange;
    if (!run || run.ended) return noRun(target);
    const network = this.options.network();
    const capped = run.admit(target, network);
    if (capped) return capped;
    exchange.admitted = true;
    const standing = listing(target, allowPatterns(network.allow), this.grants.under(network));
    if (isIP(target.host)) {
      const special = forbiddenAddress(target, [target.host], standing);
      if (special) return specialAddress(target, special);
    }
    exchange.decision = 'allowed';
    if (standing === 'unlisted') {
      // Never resolved before it is allowed: a lookup of an unlisted name would tell its DNS server.
      if (!network.ask || !run.handler) return notListed(target);
      const refusal = await this.ask(run, run.handler, target);
      if (refusal) return refusal;
      exchange.decision = 'asked';
    }
    let addresses: string[];
    try {
      addresses = await addressesOf(target.host, this.lookup, run.signal);
    } catch (error) {
      return failed(target, `the name did not resolve (${errorText(error)})`);
    }
    const special = forbiddenAddress(target, addresses, standing);
    if (special) return specialAddress(target, special);
    try {
      const connected = await connectFirst(this.connect, addresses, target.port, run.signal);
      exchange.address = connected.address;
      return connected;
    } catch (error) {
      return failed(target, `the connection failed (${errorText(error)})`);
    }
  }

  /** Asks the user (one question per run and host:port at a time); a refusal unless allowed. */
  private async ask(run: EgressRun, handler: EgressHandler, target: EgressTarget): Promise<Refusal | undefined> {
    const key = grantKey(target);
    const context = { runId: run.runId, session: this.options.session, signal: run.signal };
    let answer;
    try {
      answer = await this.questions.answer(`${run.runId}\n${key}`, () => handler.ask(target, context), run.signal);
    } catch (error) {
      return notAsked(target, errorText(error));
    }
    if (answer === 'deny') return userDenied(target);
    this.grants.add(key, answer, this.options.network());
    return undefined;
  }
}

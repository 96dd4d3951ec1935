// A transport between the SDK client and a proxied server's real transport that holds the
// server to its caps: at most so many notifications (and requests) a second, the excess
// dropped and the server's stream paused for the rest of the second so that a flood costs the
// bridge next to nothing; and a connection that can be ended at once, failing every pending
// request, when the server sends a message over the size cap. The server's request id 0 is
// renamed on the way (zero-id.ts), so that the SDK honours its cancellation. It also keeps the
// client's notifications/cancelled to requests still in flight (see send()).
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type MessageExtraInfo,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { realClock, type Clock, type ClockTimer } from '../../shared/clock.ts';
import { zeroIdIn, zeroIdOut } from './zero-id.ts';

const WINDOW_MS = 1000;
const HOLD_MS = 100;

/**
 * Reading from one server, paused and resumed: a stdio server's stdout is paused (it then
 * blocks on its own writes); an HTTP server's response bodies wait in `wait()`.
 */
export class Flow {
  private timer: ClockTimer | undefined;
  private waiters: Array<() => void> = [];
  private stream: { pause(): unknown; resume(): unknown } | undefined;
  private readonly clock: Clock;

  constructor(clock: Clock = realClock) {
    this.clock = clock;
  }

  attach(stream: { pause(): unknown; resume(): unknown }): void {
    this.stream = stream;
  }

  /** Stops reading for `ms` (no-op while already held). */
  hold(ms: number): void {
    if (this.timer) return;
    this.stream?.pause();
    this.timer = this.clock.setTimeout(() => this.release(), Math.max(1, ms));
  }

  release(): void {
    if (!this.timer) return;
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.stream?.resume();
    for (const resolve of this.waiters.splice(0)) resolve();
  }

  /** Resolves when reading may go on. */
  wait(): Promise<void> {
    return this.timer ? new Promise((resolve) => this.waiters.push(resolve)) : Promise.resolve();
  }
}

export interface GuardOptions {
  maxPerSecond: number;
  flow: Flow;
  /** Called with the total dropped so far, each time one is dropped. */
  onDropped(total: number): void;
  /** Whether an error of the inner transport means a message over the size cap. */
  isOversize?(error: Error): boolean;
  onOversize?(): void;
  /** Called once the inner transport has started (a stdio server's process exists). */
  onStarted?(): void;
  /** What the rate window reads the time from (tests drive it). */
  clock?: Clock;
}

export class GuardedTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;
  private readonly inner: Transport;
  private readonly options: GuardOptions;
  private windowStart = -Infinity;
  private inWindow = 0;
  private dropped = 0;
  private closed = false;
  /** The client's requests sent and not answered yet. */
  private readonly inFlight = new Set<RequestId>();

  constructor(inner: Transport, options: GuardOptions) {
    this.inner = inner;
    this.options = options;
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  setProtocolVersion(version: string): void {
    this.inner.setProtocolVersion?.(version);
  }

  async start(): Promise<void> {
    this.inner.onmessage = (message, extra) => {
      if ((isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) && message.id !== undefined)
        this.inFlight.delete(message.id);
      if (this.closed || !this.admit(message)) return;
      this.onmessage?.(zeroIdIn(message), extra);
    };
    this.inner.onerror = (error) => {
      if (this.options.isOversize?.(error)) {
        this.options.onOversize?.();
        this.end();
      }
      this.onerror?.(error);
    };
    this.inner.onclose = () => this.fireClose();
    await this.inner.start();
    this.options.onStarted?.();
  }

  /**
   * The SDK never removes its abort listener from a request that was answered, so one signal
   * shared by several requests (a task's call and every tasks/get poll) cancels them all when
   * it aborts: only a request still in flight is told cancelled (MCP: a cancellation references
   * a request believed to be in progress).
   */
  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (isJSONRPCRequest(message)) this.inFlight.add(message.id);
    else if (isJSONRPCNotification(message) && message.method === 'notifications/cancelled') {
      const id = message.params?.requestId;
      if (!(typeof id === 'string' || typeof id === 'number') || !this.inFlight.delete(id)) return Promise.resolve();
    }
    return this.inner.send(zeroIdOut(message), options);
  }

  async close(): Promise<void> {
    try {
      await this.inner.close();
    } finally {
      this.fireClose();
    }
  }

  /** Ends the connection now: pending requests fail at once; the server is stopped behind. */
  end(): void {
    this.fireClose();
    this.inner.close().catch(() => undefined);
  }

  private fireClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.inFlight.clear();
    this.options.flow.release();
    this.onclose?.();
  }

  /** Responses always pass; what the server sends of its own accord is rate-limited. */
  private admit(message: JSONRPCMessage): boolean {
    if (!('method' in message)) return true;
    const now = (this.options.clock ?? realClock).now();
    if (now - this.windowStart >= WINDOW_MS) {
      this.windowStart = now;
      this.inWindow = 0;
    }
    if (++this.inWindow <= this.options.maxPerSecond) return true;
    this.dropped++;
    this.options.flow.hold(Math.min(HOLD_MS, this.windowStart + WINDOW_MS - now));
    this.options.onDropped(this.dropped);
    return false;
  }
}

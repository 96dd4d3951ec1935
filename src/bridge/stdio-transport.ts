// The bridge's MCP transport on stdin/stdout: the SDK's stdio transport, but a message it cannot
// take is answered (or, when it answers one of ours, turned into an error for that request) and
// the bridge carries on. The SDK's would close on a line over 10 MiB (ending every session) and
// leave malformed JSON, non-JSON-RPC values and batches unanswered. Batches are taken only from a
// client that negotiated the protocol revision that has them. A request before initialize (but
// ping) is refused, as MCP's lifecycle has it; the SDK's server would answer it.
import process from 'node:process';
import type { Readable, Writable } from 'node:stream';
import { serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ErrorCode,
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  JSONRPCMessageSchema,
  RequestIdSchema,
  type JSONRPCErrorResponse,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { sizeText } from '../shared/byte-size.ts';
import { bareErrorMessage } from './proxy/server-errors.ts';
import { LineReader, readMessageHead, type MessageHead } from './stdio-lines.ts';

/**
 * The largest message a client may send. Above the largest legal request (run_python's `code`
 * of MAX_CODE_CHARS, 1 Mi characters, is at most 6 MiB as JSON even with every character
 * escaped as `\uXXXX`), and the size MCP's stdio clients already refuse in the other direction.
 */
export const MAX_CLIENT_MESSAGE_BYTES = 10 * 1024 * 1024;

/** An error answer; `id` null when the message's own id could not be read. */
interface ErrorAnswer {
  jsonrpc: '2.0';
  id: RequestId | null;
  error: { code: number; message: string };
}

/**
 * The one MCP revision that has JSON-RPC batches (added in it, taken out in the next): a client
 * that negotiated it may send them, and its batches are taken message by message.
 */
export const BATCH_PROTOCOL_VERSION = '2025-03-26';

/** What a client may ask before it sent initialize (MCP's lifecycle: pings only). */
const BEFORE_INITIALIZE: ReadonlySet<string> = new Set(['initialize', 'ping']);

/** The answers of one batch, written as one array once every request in it has its own. */
interface Batch {
  waiting: Set<RequestId>;
  answers: Array<JSONRPCMessage | ErrorAnswer>;
  written: boolean;
}

export class BridgeStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private readonly log: (message: string) => void;
  private readonly input: Readable;
  private readonly output: Writable;
  private readonly maxMessageBytes: number;
  private readonly reader: LineReader;
  private started = false;
  /** The id of the client's initialize request, and the protocol revision the answer to it settled. */
  private initializeId: RequestId | undefined;
  private protocolVersion: string | undefined;
  /** The batch each request of a batch belongs to, until it is answered. */
  private readonly batches = new Map<RequestId, Batch>();

  constructor(
    log: (message: string) => void = () => {},
    input: Readable = process.stdin,
    output: Writable = process.stdout,
    maxMessageBytes = MAX_CLIENT_MESSAGE_BYTES,
  ) {
    this.log = log;
    this.input = input;
    this.output = output;
    this.maxMessageBytes = maxMessageBytes;
    this.reader = new LineReader(maxMessageBytes);
  }

  start(): Promise<void> {
    if (this.started) return Promise.reject(new Error('the stdio transport is already started'));
    this.started = true;
    this.input.on('data', this.ondata);
    this.input.on('error', this.oninputError);
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.input.off('data', this.ondata);
    this.input.off('error', this.oninputError);
    if (this.input.listenerCount('data') === 0) this.input.pause();
    this.onclose?.();
    return Promise.resolve();
  }

  send(sent: JSONRPCMessage): Promise<void> {
    const message = isJSONRPCErrorResponse(sent) ? withBareMessage(sent) : sent;
    if (!isJSONRPCResultResponse(message) && !isJSONRPCErrorResponse(message)) return this.write(serializeMessage(message));
    if (isJSONRPCResultResponse(message) && message.id === this.initializeId && typeof message.result.protocolVersion === 'string')
      this.protocolVersion = message.result.protocolVersion;
    const batch = message.id === undefined ? undefined : this.batches.get(message.id);
    if (!batch || message.id === undefined) return this.write(serializeMessage(message));
    // An answer to a request of a batch waits for the batch's other answers.
    batch.answers.push(message);
    return this.settled(message.id, batch);
  }

  /** A request of a batch is answered (or cancelled: it gets no answer); the batch goes out with its last. */
  private settled(id: RequestId, batch: Batch): Promise<void> {
    this.batches.delete(id);
    batch.waiting.delete(id);
    if (batch.waiting.size > 0 || batch.written || batch.answers.length === 0) return Promise.resolve();
    batch.written = true;
    return this.write(`${JSON.stringify(batch.answers)}\n`);
  }

  private write(text: string): Promise<void> {
    return new Promise((resolve) => {
      if (this.output.write(text)) resolve();
      else this.output.once('drain', resolve);
    });
  }

  private readonly oninputError = (error: Error) => this.onerror?.(error);

  private readonly ondata = (chunk: Buffer | string) => {
    for (const event of this.reader.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk)) {
      if (event.kind === 'line') this.line(event.line);
      else {
        const why = `over the ${sizeText(this.maxMessageBytes)} the bridge reads in one message; send less at once`;
        const answer = this.refuse(readMessageHead(event.head.toString('utf8')), why);
        if (answer) void this.write(`${JSON.stringify(answer)}\n`);
      }
    }
  };

  /** One complete line: a message for the SDK, or an answer saying why not. */
  private line(line: string): void {
    // A blank line (a keep-alive, a stray CRLF) is no message: nothing to answer.
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      this.log('a client message that is not JSON was answered with a parse error');
      void this.write(`${JSON.stringify(errorAnswer(null, ErrorCode.ParseError, 'Parse error: the message is not JSON'))}\n`);
      return;
    }
    const answer = Array.isArray(value) ? this.batch(value) : this.take(value);
    if (answer) void this.write(`${JSON.stringify(answer)}\n`);
  }

  /** A message passed on to the SDK, or the answer that refuses it. */
  private take(value: unknown): ErrorAnswer | undefined {
    const message = JSONRPCMessageSchema.safeParse(value);
    if (
      message.success &&
      isJSONRPCRequest(message.data) &&
      this.initializeId === undefined &&
      !BEFORE_INITIALIZE.has(message.data.method)
    ) {
      const { id, method } = message.data;
      this.log(`a client request (id ${JSON.stringify(id)}) for ${method} before initialize was answered with an error`);
      return errorAnswer(
        id,
        ErrorCode.InvalidRequest,
        `Invalid Request: ${method} before initialize; send initialize first (MCP lifecycle)`,
      );
    }
    if (message.success) {
      this.deliver(message.data);
      return undefined;
    }
    return this.refuse(headOf(value), 'not a JSON-RPC 2.0 request, notification or response (see the MCP specification)');
  }

  private deliver(message: JSONRPCMessage): void {
    if (isJSONRPCRequest(message) && message.method === 'initialize') this.initializeId = message.id;
    // A cancelled request is not answered: its batch must not wait for it.
    if (isJSONRPCNotification(message) && message.method === 'notifications/cancelled') {
      const id = RequestIdSchema.safeParse(message.params?.requestId);
      const batch = id.success ? this.batches.get(id.data) : undefined;
      if (id.success && batch) void this.settled(id.data, batch);
    }
    try {
      this.onmessage?.(message);
    } catch (error) {
      this.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /**
   * A batch: refused as a whole, unless the client negotiated the one protocol revision that has
   * batches; then each of its messages is taken, and their answers are written together, as one
   * array, once every request of it has its answer.
   */
  private batch(values: unknown[]): ErrorAnswer | Batch['answers'] | undefined {
    if (this.protocolVersion !== BATCH_PROTOCOL_VERSION) {
      this.log(`a JSON-RPC batch of ${values.length} messages was refused: batches are not supported`);
      return errorAnswer(
        null,
        ErrorCode.InvalidRequest,
        `Invalid Request: batches are not supported (MCP ${this.protocolVersion ?? 'before initialize'}); send each message on its own line`,
      );
    }
    if (values.length === 0) return errorAnswer(null, ErrorCode.InvalidRequest, 'Invalid Request: the batch is empty');
    const batch: Batch = { waiting: new Set(), answers: [], written: false };
    const messages: JSONRPCMessage[] = [];
    for (const value of values) {
      const message = JSONRPCMessageSchema.safeParse(value);
      let refused: ErrorAnswer | undefined;
      if (!message.success) refused = this.refuse(headOf(value), 'not a JSON-RPC 2.0 request, notification or response');
      else if (isJSONRPCRequest(message.data) && message.data.method === 'initialize')
        refused = errorAnswer(message.data.id, ErrorCode.InvalidRequest, 'Invalid Request: initialize cannot be part of a batch');
      else {
        if (isJSONRPCRequest(message.data)) {
          batch.waiting.add(message.data.id);
          this.batches.set(message.data.id, batch);
        }
        messages.push(message.data);
      }
      if (refused) batch.answers.push(refused);
    }
    for (const message of messages) this.deliver(message);
    if (batch.waiting.size > 0 || batch.answers.length === 0) return undefined;
    batch.written = true;
    return batch.answers;
  }

  /**
   * A message that cannot be taken. A request (or what cannot be told apart from one) is answered
   * -32600 with its id; a response to one of the bridge's requests fails that request at once
   * instead of leaving it to time out (a client's answer is never answered).
   */
  private refuse(head: MessageHead, why: string): ErrorAnswer | undefined {
    const idText = head.id === undefined ? '' : ` (id ${JSON.stringify(head.id)})`;
    if (head.response && !head.method) {
      this.log(`a client response${idText} was dropped: ${why}`);
      if (head.id !== undefined)
        this.onmessage?.({
          jsonrpc: '2.0',
          id: head.id,
          error: { code: ErrorCode.InvalidRequest, message: `the client's answer was dropped: ${why}` },
        });
      return undefined;
    }
    this.log(`a client message${idText} was answered with an error: ${why}`);
    return errorAnswer(head.id ?? null, ErrorCode.InvalidRequest, `Invalid Request: the message is ${why}`);
  }
}

function errorAnswer(id: RequestId | null, code: number, message: string): ErrorAnswer {
  return { jsonrpc: '2.0', id, error: { code, message } };
}

/** What a parsed value that is not a JSON-RPC message says of itself: its usable id, and its kind. */
function headOf(value: unknown): MessageHead {
  const fields = value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  const id = typeof fields.id === 'string' || (typeof fields.id === 'number' && Number.isFinite(fields.id)) ? fields.id : undefined;
  return { ...(id === undefined ? {} : { id }), method: 'method' in fields, response: 'result' in fields || 'error' in fields };
}

/**
 * The SDK's McpError carries "MCP error <code>: " in its message and the client adds it again
 * ("MCP error -32602: MCP error -32602: ..."): the answer carries the bare text.
 */
function withBareMessage(message: JSONRPCErrorResponse): JSONRPCErrorResponse {
  const bare = bareErrorMessage(message.error.message);
  return bare === message.error.message ? message : { ...message, error: { ...message.error, message: bare } };
}

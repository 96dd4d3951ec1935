// The bridge's MCP transport on stdin/stdout: the SDK's stdio transport, but a message it cannot
// take is answered (or, when it answers one of ours, turned into an error for that request) and
// the bridge carries on. The SDK's would close on a line over 10 MiB (ending every session) and
// leave malformed JSON, non-JSON-RPC values and batches unanswered.
import process from 'node:process';
import type { Readable, Writable } from 'node:stream';
import { serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, JSONRPCMessageSchema, type JSONRPCMessage, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { sizeText } from '../shared/byte-size.ts';
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

  send(message: JSONRPCMessage): Promise<void> {
    return this.write(serializeMessage(message));
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
      else
        this.refuse(
          readMessageHead(event.head.toString('utf8')),
          `over the ${sizeText(this.maxMessageBytes)} the bridge reads in one message; send less at once`,
        );
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
      void this.answer(null, ErrorCode.ParseError, 'Parse error: the message is not JSON');
      return;
    }
    if (Array.isArray(value)) {
      this.log(`a JSON-RPC batch of ${value.length} messages was refused: batches are not supported`);
      void this.answer(null, ErrorCode.InvalidRequest, 'Invalid Request: batches are not supported; send each message on its own line');
      return;
    }
    const message = JSONRPCMessageSchema.safeParse(value);
    if (message.success) {
      try {
        this.onmessage?.(message.data);
      } catch (error) {
        this.onerror?.(error instanceof Error ? error : new Error(String(error)));
      }
      return;
    }
    const fields = value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {};
    const id = typeof fields.id === 'string' || (typeof fields.id === 'number' && Number.isFinite(fields.id)) ? fields.id : undefined;
    this.refuse(
      { ...(id === undefined ? {} : { id }), method: 'method' in fields, response: 'result' in fields || 'error' in fields },
      'not a JSON-RPC 2.0 request, notification or response (see the MCP specification)',
    );
  }

  /**
   * A message that cannot be taken. A request (or what cannot be told apart from one) is answered
   * -32600 with its id; a response to one of the bridge's requests fails that request at once
   * instead of leaving it to time out (a client's answer is never answered).
   */
  private refuse(head: MessageHead, why: string): void {
    const idText = head.id === undefined ? '' : ` (id ${JSON.stringify(head.id)})`;
    if (head.response && !head.method) {
      this.log(`a client response${idText} was dropped: ${why}`);
      if (head.id === undefined) return;
      this.onmessage?.({
        jsonrpc: '2.0',
        id: head.id,
        error: { code: ErrorCode.InvalidRequest, message: `the client's answer was dropped: ${why}` },
      });
      return;
    }
    this.log(`a client message${idText} was answered with an error: ${why}`);
    void this.answer(head.id ?? null, ErrorCode.InvalidRequest, `Invalid Request: the message is ${why}`);
  }

  private answer(id: RequestId | null, code: number, message: string): Promise<void> {
    const answer: ErrorAnswer = { jsonrpc: '2.0', id, error: { code, message } };
    return this.write(`${JSON.stringify(answer)}\n`);
  }
}

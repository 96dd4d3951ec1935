// The lines a client writes to the bridge's stdin, with a cap on one line: bytes past the cap are
// skipped up to the next newline as they arrive, never buffered, and what an oversized line was
// (its id, whether it answers one of ours) is read from its first bytes only.
import type { RequestId } from '@modelcontextprotocol/sdk/types.js';

/** What the reader found in the bytes given to it. */
export type LineEvent =
  | { kind: 'line'; line: string }
  /** A line over the cap, told once, as soon as it is known; `head` is its first bytes. */
  | { kind: 'oversized'; head: Buffer };

/** The first bytes of an oversized line kept to read its id from. */
export const OVERSIZED_HEAD_BYTES = 64 * 1024;

const NEWLINE = 0x0a;

export class LineReader {
  private chunks: Buffer[] = [];
  private size = 0;
  /** Inside an oversized line: everything up to the next newline is dropped. */
  private skipping = false;

  private readonly maxLineBytes: number;

  constructor(maxLineBytes: number) {
    this.maxLineBytes = maxLineBytes;
  }

  /** The complete lines (without their `\n` or `\r\n`) and oversized lines in `chunk`. */
  push(chunk: Buffer): LineEvent[] {
    const events: LineEvent[] = [];
    let start = 0;
    while (start < chunk.length) {
      const end = chunk.indexOf(NEWLINE, start);
      const piece = chunk.subarray(start, end === -1 ? chunk.length : end);
      if (this.skipping) {
        if (end !== -1) this.skipping = false;
      } else if (this.size + piece.length > this.maxLineBytes) {
        events.push({ kind: 'oversized', head: this.head(piece) });
        this.chunks = [];
        this.size = 0;
        this.skipping = end === -1;
      } else if (end === -1) {
        this.chunks.push(piece);
        this.size += piece.length;
      } else {
        const line = this.chunks.length === 0 ? piece : Buffer.concat([...this.chunks, piece]);
        this.chunks = [];
        this.size = 0;
        const text = line.toString('utf8');
        events.push({ kind: 'line', line: text.endsWith('\r') ? text.slice(0, -1) : text });
      }
      if (end === -1) break;
      start = end + 1;
    }
    return events;
  }

  /** The first bytes of the line buffered so far and `piece`. */
  private head(piece: Buffer): Buffer {
    const parts: Buffer[] = [];
    let bytes = 0;
    for (const part of [...this.chunks, piece]) {
      if (bytes >= OVERSIZED_HEAD_BYTES) break;
      parts.push(part.subarray(0, OVERSIZED_HEAD_BYTES - bytes));
      bytes += parts.at(-1)!.length;
    }
    return Buffer.concat(parts);
  }
}

/** What the first bytes of a JSON-RPC message say of it. */
export interface MessageHead {
  /** Its top-level `id`, when it comes before the text runs out and is a usable one. */
  id?: RequestId;
  /** It has a top-level `method` (a request or notification). */
  method: boolean;
  /** It has a top-level `result` or `error` (a response to one of the bridge's requests). */
  response: boolean;
}

/**
 * Reads the top-level keys of a JSON object from its first bytes, without parsing the rest:
 * keys are seen as they begin, so a huge `params` or `result` hides only the keys after it.
 */
export function readMessageHead(text: string): MessageHead {
  const head: MessageHead = { method: false, response: false };
  const scan = new Scanner(text);
  if (!scan.take('{')) return head;
  for (;;) {
    const key = scan.string();
    if (key === undefined || !scan.take(':')) return head;
    if (key === 'method') head.method = true;
    if (key === 'result' || key === 'error') head.response = true;
    const from = scan.at();
    if (!scan.value()) return head;
    if (key === 'id') {
      const id = usableId(text.slice(from, scan.at()));
      if (id === undefined) delete head.id;
      else head.id = id;
    }
    if (!scan.take(',')) return head;
  }
}

/** A JSON text that is an MCP request id (a string or a number), or undefined. */
function usableId(json: string): RequestId | undefined {
  try {
    const value: unknown = JSON.parse(json);
    return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value)) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** A forward-only reader of JSON tokens that stops (returns false) where the text ends. */
class Scanner {
  private i = 0;
  private readonly text: string;

  constructor(text: string) {
    this.text = text;
  }

  at(): number {
    return this.i;
  }

  private space(): void {
    while (this.i < this.text.length && ' \t\r\n'.includes(this.text[this.i]!)) this.i++;
  }

  take(char: string): boolean {
    this.space();
    if (this.text[this.i] !== char) return false;
    this.i++;
    return true;
  }

  /** A string's value (escapes decoded), or undefined when there is none whole here. */
  string(): string | undefined {
    this.space();
    const from = this.i;
    if (!this.skipString()) return undefined;
    try {
      return JSON.parse(this.text.slice(from, this.i)) as string;
    } catch {
      return undefined;
    }
  }

  private skipString(): boolean {
    if (this.text[this.i] !== '"') return false;
    for (let i = this.i + 1; i < this.text.length; i++) {
      if (this.text[i] === '\\') i++;
      else if (this.text[i] === '"') {
        this.i = i + 1;
        return true;
      }
    }
    return false;
  }

  /** Skips one value (nested ones by their brackets); false when it does not end here. */
  value(): boolean {
    this.space();
    const first = this.text[this.i];
    if (first === '"') return this.skipString();
    if (first === '{' || first === '[') {
      let depth = 0;
      while (this.i < this.text.length) {
        const char = this.text[this.i]!;
        if (char === '"') {
          if (!this.skipString()) return false;
          continue;
        }
        if (char === '{' || char === '[') depth++;
        else if (char === '}' || char === ']') depth--;
        this.i++;
        if (depth === 0) return true;
      }
      return false;
    }
    const scalar = /^[^,}\]\s]+/.exec(this.text.slice(this.i, this.i + 64));
    if (!scalar || this.i + scalar[0].length >= this.text.length) return false;
    this.i += scalar[0].length;
    return true;
  }
}

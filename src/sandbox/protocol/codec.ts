// Length-prefixed frames: a 4-byte big-endian length, then that many bytes of UTF-8 JSON.
// Lengths let a frame carry any bytes (a 10 MB tool result, output with frame-like text)
// without escaping; the decoder refuses an oversized length before buffering anything.

export const FRAME_HEADER_BYTES = 4;

export class FrameTooLargeError extends Error {
  override readonly name = 'FrameTooLargeError';
  readonly size: number;
  readonly limit: number;

  constructor(size: number, limit: number) {
    super(`sandbox sent a ${size}-byte frame; the limit is ${limit} bytes`);
    this.size = size;
    this.limit = limit;
  }
}

export function encodeFrame(message: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(message), 'utf8');
  const header = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
  header.writeUInt32BE(body.length, 0);
  return Buffer.concat([header, body]);
}

/**
 * Incremental decoder for a byte stream. `push` returns the complete frame bodies seen so far
 * (as raw JSON text, not yet trusted); it throws FrameTooLargeError when a header announces
 * more than `maxFrameBytes`, so a hostile sender cannot make the host buffer without bound.
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private expected = -1;

  private readonly maxFrameBytes: number;

  constructor(maxFrameBytes: number) {
    this.maxFrameBytes = maxFrameBytes;
  }

  push(chunk: Buffer): string[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const frames: string[] = [];
    for (;;) {
      if (this.expected < 0) {
        if (this.buffered < FRAME_HEADER_BYTES) break;
        const size = this.take(FRAME_HEADER_BYTES).readUInt32BE(0);
        if (size > this.maxFrameBytes) throw new FrameTooLargeError(size, this.maxFrameBytes);
        this.expected = size;
      }
      if (this.buffered < this.expected) break;
      frames.push(this.take(this.expected).toString('utf8'));
      this.expected = -1;
    }
    return frames;
  }

  /** Bytes received but not yet part of a complete frame. */
  get pendingBytes(): number {
    return this.buffered;
  }

  private take(n: number): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
    return out;
  }
}

// Length-prefixed frames: a 4-byte big-endian length, then that many bytes of UTF-8 JSON.
// Lengths let a frame carry any bytes (a 10 MB tool result, output with frame-like text)
// without escaping; the decoder refuses an oversized length before buffering anything, and a
// frame of a known type over that type's own cap as soon as the body's first bytes name it.

export const FRAME_HEADER_BYTES = 4;

/** Caps on a frame's body: any frame, and by type (its `t`), each the largest that type can need. */
export interface FrameLimits {
  max: number;
  byType?: Readonly<Record<string, number>>;
}

/** How the kernel starts every frame (compact JSON, `t` first); other senders get the checks after parsing. */
const TYPE_PREFIX = /^\{"t":"([a-z]{1,16})"/;
const PEEK_BYTES = 24;

export class FrameTooLargeError extends Error {
  override readonly name = 'FrameTooLargeError';
  readonly size: number;
  readonly limit: number;

  constructor(size: number, limit: number, type?: string) {
    super(`sandbox sent a ${size}-byte ${type ? `"${type}" ` : ''}frame; the limit is ${limit} bytes`);
    this.size = size;
    this.limit = limit;
  }
}

/** The cap on a frame of this type (any frame's cap for a type without its own). */
export function frameLimit(limits: FrameLimits, type: string): number {
  const own = limits.byType && Object.hasOwn(limits.byType, type) ? limits.byType[type] : undefined;
  return Math.min(own ?? limits.max, limits.max);
}

/** Throws FrameTooLargeError when a parsed frame's body is over its type's cap. */
export function checkFrameSize(limits: FrameLimits, type: string, body: string): void {
  const limit = frameLimit(limits, type);
  // A UTF-16 length times 3 bounds the UTF-8 length: most frames need no count.
  if (body.length * 3 <= limit) return;
  const size = Buffer.byteLength(body, 'utf8');
  if (size > limit) throw new FrameTooLargeError(size, limit, type);
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
 * more than the limit, or when the body's first bytes name a type whose cap the length is
 * over, so a hostile sender cannot make the host buffer more than one frame can need.
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private expected = -1;
  /** Whether the frame being received has had its type's cap checked. */
  private typed = false;

  private readonly limits: FrameLimits;

  constructor(limits: number | FrameLimits) {
    this.limits = typeof limits === 'number' ? { max: limits } : limits;
  }

  push(chunk: Buffer): string[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const frames: string[] = [];
    for (;;) {
      if (this.expected < 0) {
        if (this.buffered < FRAME_HEADER_BYTES) break;
        const size = this.take(FRAME_HEADER_BYTES).readUInt32BE(0);
        if (size > this.limits.max) throw new FrameTooLargeError(size, this.limits.max);
        this.expected = size;
        this.typed = !this.limits.byType;
      }
      if (!this.typed && !this.checkType()) break;
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

  /**
   * Refuses the frame being received when its first bytes name a type it is too big for.
   * False while too few bytes are in to tell.
   */
  private checkType(): boolean {
    const first = this.chunks[0];
    const head = (first && first.length >= PEEK_BYTES ? first : Buffer.concat(this.chunks))
      .subarray(0, Math.min(PEEK_BYTES, this.expected))
      .toString('latin1');
    const type = TYPE_PREFIX.exec(head)?.[1];
    if (type === undefined && head.length < Math.min(PEEK_BYTES, this.expected)) return false;
    this.typed = true;
    const limit = type === undefined ? this.limits.max : frameLimit(this.limits, type);
    if (this.expected > limit) throw new FrameTooLargeError(this.expected, limit, type);
    return true;
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

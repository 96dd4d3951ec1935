// Bounded capture of a run's stdout or stderr: keeps the first and the last part and counts
// what was cut, so a 10 MB print costs the host at most `limit` characters.

export class CappedText {
  private head = '';
  private tailParts: string[] = [];
  private tailLength = 0;
  private total = 0;
  private readonly headLimit: number;
  private readonly tailLimit: number;

  readonly limit: number;

  constructor(limit: number) {
    this.limit = limit;
    this.headLimit = Math.ceil(limit / 2);
    this.tailLimit = limit - this.headLimit;
  }

  append(text: string): void {
    this.total += text.length;
    if (this.head.length < this.headLimit) {
      const room = this.headLimit - this.head.length;
      this.head += text.slice(0, room);
      text = text.slice(room);
      if (text.length === 0) return;
    }
    this.tailParts.push(text);
    this.tailLength += text.length;
    // Compact only when the tail doubles its budget, so appends stay amortised O(1).
    if (this.tailLength > this.tailLimit * 2) this.compactTail();
  }

  /** Characters dropped from the middle. */
  get omitted(): number {
    return Math.max(0, this.total - this.limit);
  }

  get totalLength(): number {
    return this.total;
  }

  get truncated(): boolean {
    return this.omitted > 0;
  }

  toString(): string {
    this.compactTail();
    if (!this.truncated) return this.head + this.tailParts.join('');
    const tail = this.tailParts.join('');
    return `${this.head}\n... [${this.omitted} characters omitted] ...\n${tail}`;
  }

  private compactTail(): void {
    const tail = this.tailParts.join('');
    const kept = tail.length > this.tailLimit ? tail.slice(tail.length - this.tailLimit) : tail;
    this.tailParts = kept.length > 0 ? [kept] : [];
    this.tailLength = kept.length;
  }
}

/**
 * Calls that must be under way at the same time: each waits until `count` wait together, then all
 * go on, told how many met. Concurrency shown by a signal, not a clock. A call still alone after
 * `aloneMs` goes on by itself (told 1), so that code making the calls one at a time fails on what
 * it saw instead of hanging; `most` is how many ever waited at once.
 */
export class Meeting {
  most = 0;
  private readonly waiting: Array<(together: number) => void> = [];

  private readonly count: number;
  private readonly aloneMs: number;

  constructor(count: number, aloneMs = 10_000) {
    this.count = count;
    this.aloneMs = aloneMs;
  }

  join(): Promise<number> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.most = Math.max(this.most, this.waiting.length);
      if (this.waiting.length >= this.count) {
        const met = this.waiting.length;
        for (const go of this.waiting.splice(0)) go(met);
        return;
      }
      setTimeout(() => {
        const at = this.waiting.indexOf(resolve);
        if (at < 0) return;
        this.waiting.splice(at, 1);
        resolve(1);
      }, this.aloneMs).unref();
    });
  }
}

// When a proxied server says its tool list changed, the list is read again: after a short
// debounce, one reading at a time, at most every RELIST_INTERVAL_MS, and once more when it
// changed again meanwhile. Only for the link that is current.

/** A tool list change is acted on after this, and relisting happens at most this often. */
const RELIST_DEBOUNCE_MS = 200;
const RELIST_INTERVAL_MS = 2000;

export class Relister<L> {
  private readonly relist: (link: L) => Promise<void>;
  private readonly current: (link: L) => boolean;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private again = false;
  private last = 0;

  /** `relist` reads the list again (its errors are its own to handle); `current` says if a link still is. */
  constructor(relist: (link: L) => Promise<void>, current: (link: L) => boolean) {
    this.relist = relist;
    this.current = current;
  }

  /** The server of `link` said its tools changed. */
  changed(link: L): void {
    if (!this.current(link)) return;
    if (this.timer || this.running) {
      this.again = true;
      return;
    }
    const wait = Math.max(RELIST_DEBOUNCE_MS, this.last + RELIST_INTERVAL_MS - Date.now());
    this.timer = setTimeout(() => void this.run(link), wait);
  }

  /** Drops a relisting not started yet. */
  cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async run(link: L): Promise<void> {
    this.timer = undefined;
    if (!this.current(link)) return;
    this.running = true;
    this.again = false;
    this.last = Date.now();
    try {
      await this.relist(link);
    } finally {
      this.running = false;
      if (this.again) this.changed(link);
    }
  }
}

// notifications/tools/list_changed for the bridge's own listing: sent only once the client has
// initialized, once per burst of changes, and only when the listing it would now get differs
// from the one it had. The SDK's RegisteredTool.update() asks for the notice on every update,
// before initialize too: ListedMcpServer routes that ask through a ListingNotice.
import { McpServer, type RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { realClock, type Clock, type ClockTimer } from '../../shared/clock.ts';

/** Changes closer together than this make one notice. */
export const LISTING_NOTICE_MS = 250;

export interface ListingNoticeOptions {
  /** The listing as the client would get it now (compared as text). */
  render: () => string;
  /** Tells the client (the SDK's sendToolListChanged). */
  send: () => void;
  debounceMs?: number;
  clock?: Clock;
}

export class ListingNotice {
  private readonly options: ListingNoticeOptions;
  private readonly clock: Clock;
  /** The listing the client has: undefined until it initialized (it lists after that). */
  private told: string | undefined;
  private timer: ClockTimer | undefined;

  constructor(options: ListingNoticeOptions) {
    this.options = options;
    this.clock = options.clock ?? realClock;
  }

  /** The client initialized: it lists now, so what it gets is the listing as it stands. */
  initialized(): void {
    this.told = this.options.render();
  }

  /**
   * The listing may have changed. Compared at once, so that a change that leaves the listing as
   * it was schedules nothing; compared again when the burst is over, so that a change undone
   * within it sends nothing.
   */
  changed(): void {
    if (this.told === undefined || this.timer) return;
    if (this.options.render() === this.told) return;
    this.timer = this.clock.setTimeout(() => this.flush(), this.options.debounceMs ?? LISTING_NOTICE_MS);
    this.timer.unref?.();
  }

  close(): void {
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private flush(): void {
    this.timer = undefined;
    const now = this.options.render();
    if (now === this.told) return;
    this.told = now;
    this.options.send();
  }
}

/** What tools/list says of a registered tool that can change while the bridge runs (its schemas are fixed at registration). */
export function listedText(name: string, tool: RegisteredTool): string {
  const { title, description, annotations, execution, _meta, enabled } = tool;
  return JSON.stringify({ name, title, description, annotations, execution, _meta, enabled });
}

/** An McpServer whose tools/list_changed goes through `notice` (none is sent while it is unset). */
export class ListedMcpServer extends McpServer {
  notice: ListingNotice | undefined;

  override sendToolListChanged(): void {
    this.notice?.changed();
  }

  /** Sends the notice now, if connected (what ListingNotice calls once a burst is over). */
  sendToolListChangedNow(): void {
    super.sendToolListChanged();
  }
}

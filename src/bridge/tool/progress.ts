// The words of a long run's progress notifications: how long it has run, its tool calls, and
// the last complete line it printed (a chunk may end mid-line, or be a lone fragment).
import { plural } from '../../shared/plural.ts';
import { clip } from '../../shared/clip.ts';

const SHOWN_LINE_CHARS = 120;
/** A line longer than this is shown by its start once complete; the rest is not kept. */
const MAX_PENDING_CHARS = 4096;

export function progressMessage(seconds: number, toolCalls: number, line: string): string {
  return `running for ${seconds} s${toolCalls > 0 ? `, ${plural(toolCalls, 'tool call')}` : ''}${line ? `: ${line}` : ''}`;
}

/** A proxied tool's progress as the run's progress message: "server.tool: message (3/10)". */
export function toolProgressMessage(
  server: string,
  tool: string,
  progress: { progress: number; total?: number | undefined; message?: string | undefined },
): string {
  const count = `${progress.progress}${progress.total !== undefined ? `/${progress.total}` : ''}`;
  const said = progress.message ? progress.message.replace(/\s+/g, ' ').trim() : '';
  const text = `${server}.${tool}: ${said ? `${said} (${count})` : count}`;
  return clip(text, SHOWN_LINE_CHARS + 80);
}

/** Follows output chunks of both streams and keeps the last complete, non-blank line. */
export class LastLine {
  private pending = { stdout: '', stderr: '' };
  private last = '';

  get line(): string {
    return this.last;
  }

  add(stream: 'stdout' | 'stderr', chunk: string): void {
    const text = this.pending[stream] + chunk;
    const end = text.lastIndexOf('\n');
    if (end < 0) {
      this.pending[stream] = text.slice(0, MAX_PENDING_CHARS);
      return;
    }
    this.pending[stream] = text.slice(end + 1, end + 1 + MAX_PENDING_CHARS);
    // From the last complete line backwards, to the first that is not blank.
    let stop = end;
    for (;;) {
      const start = stop === 0 ? 0 : text.lastIndexOf('\n', stop - 1) + 1;
      const shown = text.slice(start, stop).trim();
      if (shown) {
        this.last = clip(shown, SHOWN_LINE_CHARS);
        return;
      }
      if (start === 0) return;
      stop = start - 1;
    }
  }
}

// The run panel's text blocks, without `vscode`: base64 in output shown as a short placeholder
// (never as text), and long output collapsed to its head and tail so the page's DOM stays
// bounded; the full text goes to the page as data for "Show more" and search, and to an editor
// on request.
import { KnownImages, replaceBase64 } from '../../bridge/results/base64-text.ts';
import { base64Bytes, sizeText } from '../../shared/byte-size.ts';
import { escapeHtml as escape } from './html.ts';

/** Lines shown before and after the fold of a long output. */
export const HEAD_LINES = 200;
export const TAIL_LINES = 20;

const NO_IMAGES = new KnownImages([]);

/** The text with each run of base64 replaced by what it is ("<image image/png, 12 KB>"). */
export function withoutBase64(text: string): string {
  return replaceBase64(text, NO_IMAGES, (found) =>
    found.kind === 'image'
      ? `<${found.image.mime} image, ${sizeText(base64Bytes(found.image.data))}: base64 not shown>`
      : `<base64 data, ${sizeText(found.bytes)}: not shown>`,
  );
}

/**
 * One output block: the whole text when short; else its first HEAD_LINES and last TAIL_LINES
 * lines around a fold that says how many are hidden, with "Show more" and "Open in Editor".
 * `stream` names the block for the page's script (its full text is in the page's data).
 */
export function outputBlock(stream: string, text: string, cls = ''): string {
  const lines = text.split('\n');
  const open = `<button class="open-text" data-stream="${escape(stream)}" title="Open the whole text in an editor">Open in Editor</button>`;
  if (lines.length <= HEAD_LINES + TAIL_LINES + 10) {
    return `<div class="block">${lines.length > 20 ? `<div class="block-actions">${open}</div>` : ''}<pre class="${escape(cls)}" data-stream="${escape(stream)}">${escape(text)}</pre></div>`;
  }
  const hidden = lines.length - HEAD_LINES - TAIL_LINES;
  return (
    `<div class="block folded"><pre class="${escape(cls)} head" data-stream="${escape(stream)}" data-shown="${HEAD_LINES}">${escape(lines.slice(0, HEAD_LINES).join('\n'))}</pre>` +
    `<div class="fold" data-stream="${escape(stream)}"><span class="hidden-count">${hidden} lines hidden</span> ` +
    `<button class="show-more" data-stream="${escape(stream)}">Show more</button> ${open}</div>` +
    `<pre class="${escape(cls)} tail">${escape(lines.slice(-TAIL_LINES).join('\n'))}</pre></div>`
  );
}

/** The page's data: the full texts by stream, as JSON that cannot end the script element. */
export function streamsJson(streams: Record<string, string>): string {
  return JSON.stringify(streams)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

// Base64 inside output text (a tool's image printed or returned, encoded bytes): found, told
// apart (a known image, an image by its first bytes, other data), and replaced by a short
// placeholder, so that no base64 reaches the model as text.
import { createHash } from 'node:crypto';
import { base64Bytes } from '../../shared/byte-size.ts';

export interface FoundImage {
  mime: string;
  /** Complete base64 of the image. */
  data: string;
}

/** What a run of base64 in the text is: an image that can be attached, or other data. */
export type Base64Kind = { kind: 'image'; image: FoundImage } | { kind: 'data'; bytes: number };

/**
 * A run of at least 64 base64 characters, and any further full lines of it (MIME-style
 * wrapping, as real or as escaped newlines in a repr). Linear: no nested choices overlap.
 */
const BASE64_RUN = /[A-Za-z0-9+/]{64,}(?:(?:\r?\n|\\n)[A-Za-z0-9+/]{60,})*={0,2}/g;
/** Base64 runs shorter than this are left alone unless they are a known image's. */
const MIN_DATA_CHARS = 256;

const MAGIC: Array<[string, string]> = [
  ['iVBORw0KGgo', 'image/png'],
  ['/9j/', 'image/jpeg'],
  ['R0lGODdh', 'image/gif'],
  ['R0lGODlh', 'image/gif'],
];

export function sha256(data: string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** An image format from the first bytes (PNG, JPEG, GIF, WebP); undefined for anything else. */
export function sniffImage(data: string): string | undefined {
  for (const [prefix, mime] of MAGIC) if (data.startsWith(prefix)) return mime;
  // RIFF....WEBP
  if (data.startsWith('UklGR') && Buffer.from(data.slice(0, 16), 'base64').subarray(8, 12).toString('latin1') === 'WEBP')
    return 'image/webp';
  return undefined;
}

/** Encoded bytes look varied; long runs of one letter, words or hex digits do not. */
function looksEncoded(run: string): boolean {
  const sample = run.slice(0, 1024);
  const distinct = new Set(sample).size;
  return distinct >= 24 && /[0-9]/.test(sample) && /[a-z]/.test(sample) && /[A-Z]/.test(sample);
}

/**
 * Recognises the images a run's tools returned, even cut short (a repr cut in the kernel);
 * looks up by the first characters so that a long text costs one map lookup per run of base64.
 */
export class KnownImages {
  private readonly byPrefix = new Map<string, FoundImage[]>();

  constructor(images: readonly FoundImage[]) {
    for (const image of images) {
      if (image.data.length < 64) continue;
      const key = image.data.slice(0, 64);
      const list = this.byPrefix.get(key) ?? [];
      list.push(image);
      this.byPrefix.set(key, list);
    }
  }

  find(run: string): FoundImage | undefined {
    return this.byPrefix.get(run.slice(0, 64))?.find((image) => image.data.startsWith(run));
  }
}

/** What a run of base64 is, or undefined for text that only looks like it (left as it is). */
export function classifyBase64(run: string, known: KnownImages): Base64Kind | undefined {
  const image = known.find(run);
  if (image) return { kind: 'image', image };
  if (run.length < MIN_DATA_CHARS) return undefined;
  const mime = sniffImage(run);
  // An image made in the sandbox and returned as base64 is attachable when it is all there.
  if (mime && run.length % 4 === 0) return { kind: 'image', image: { mime, data: run } };
  if (!mime && !looksEncoded(run)) return undefined;
  return { kind: 'data', bytes: base64Bytes(run) };
}

/**
 * Replaces each run of base64 in `text` by what `placeholder` says of it (runs that are not
 * base64 after all stay). Calls `placeholder` in order of appearance.
 */
export function replaceBase64(text: string, known: KnownImages, placeholder: (found: Base64Kind) => string): string {
  if (text.length < 64) return text;
  return text.replace(BASE64_RUN, (match) => {
    const run = match.replace(/\r?\n|\\n/g, '');
    const found = classifyBase64(run, known);
    return found ? placeholder(found) : match;
  });
}

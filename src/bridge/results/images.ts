// The images one result carries: those the code emitted or returned, each distinct image once,
// within a byte budget that keeps the whole result well under MCP clients' 10 MiB read limit.
// Only raster images: an SVG (or any other image type) can carry scripts and active content
// that a client might run when it shows the image, so it is refused, with what to do instead.
import { base64Bytes, sizeText } from '../../shared/byte-size.ts';
import { sha256, type FoundImage } from './base64-text.ts';

/** Image bytes one result carries (about 5.6 MB as base64). */
export const RESULT_IMAGE_BYTES = 4 * 1024 * 1024;

/** The image types a result carries as images: pixels only, nothing a viewer could run. */
const RASTER_IMAGE_MIMES: ReadonlySet<string> = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** Why an image of another type is not attached, and what to do instead. */
export const ACTIVE_IMAGE_REASON =
  'only PNG, JPEG, GIF and WebP images are returned (SVG and other image types can carry scripts); render it to PNG, or write it to /work/out to get its text back';

/** An image type that is not returned as an image (audio is not an image: it goes through). */
export function isActiveImage(image: FoundImage): boolean {
  return image.mime.startsWith('image/') ? !RASTER_IMAGE_MIMES.has(image.mime) : !image.mime.startsWith('audio/');
}

export type Attached = 'attached' | 'over-budget' | 'refused';

export class ResultImages {
  /** In order of attachment. */
  readonly attached: FoundImage[] = [];
  /** Every distinct image seen (attached or not), for the run log's full record. */
  readonly seen: FoundImage[] = [];
  private readonly attachedHashes = new Set<string>();
  private readonly droppedHashes = new Set<string>();
  private readonly refusedHashes = new Set<string>();
  private readonly hashes = new Map<string, string>();
  private used = 0;
  private readonly budget: number;

  constructor(budget = RESULT_IMAGE_BYTES) {
    this.budget = budget;
  }

  /** Images left out for the budget. */
  get dropped(): number {
    return this.droppedHashes.size;
  }

  /** Images left out for their type (isActiveImage). */
  get refused(): number {
    return this.refusedHashes.size;
  }

  /** Attaches the image unless it is already attached, of a refused type, or would go over the budget. */
  attach(image: FoundImage): Attached {
    const hash = this.hashOf(image);
    if (this.attachedHashes.has(hash)) return 'attached';
    if (isActiveImage(image)) {
      this.refusedHashes.add(hash);
      return 'refused';
    }
    const bytes = base64Bytes(image.data);
    if (this.used + bytes > this.budget) {
      this.droppedHashes.add(hash);
      return 'over-budget';
    }
    this.used += bytes;
    this.attachedHashes.add(hash);
    this.attached.push(image);
    return 'attached';
  }

  isAttached(image: FoundImage): boolean {
    return this.attachedHashes.has(this.hashOf(image));
  }

  /** Drops every attachment (the last resort of a result that would be too big). */
  dropAll(): void {
    for (const hash of this.attachedHashes) this.droppedHashes.add(hash);
    this.attachedHashes.clear();
    this.attached.length = 0;
    this.used = 0;
  }

  budgetText(): string {
    return sizeText(this.budget);
  }

  private hashOf(image: FoundImage): string {
    let hash = this.hashes.get(image.data);
    if (hash === undefined) {
      hash = sha256(image.data);
      this.hashes.set(image.data, hash);
      this.seen.push(image);
    }
    return hash;
  }
}

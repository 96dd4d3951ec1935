// The images one result carries: those the code emitted or returned, each distinct image once,
// within a byte budget that keeps the whole result well under MCP clients' 10 MiB read limit.
import { base64Bytes, sha256, sizeText, type FoundImage } from './base64-text.ts';

/** Image bytes one result carries (about 5.6 MB as base64). */
export const RESULT_IMAGE_BYTES = 4 * 1024 * 1024;

export type Attached = 'attached' | 'over-budget';

export class ResultImages {
  /** In order of attachment. */
  readonly attached: FoundImage[] = [];
  /** Every distinct image seen (attached or not), for the run log's full record. */
  readonly seen: FoundImage[] = [];
  private readonly attachedHashes = new Set<string>();
  private readonly droppedHashes = new Set<string>();
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

  /** Attaches the image unless it is already attached or would go over the budget. */
  attach(image: FoundImage): Attached {
    const hash = this.hashOf(image);
    if (this.attachedHashes.has(hash)) return 'attached';
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

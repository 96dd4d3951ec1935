// What a run leaves beside the log: its images, and the files it left in /work/out
// (`<run>-out-<i>.dat`), in images/ (0600; the panel shows them), within a per-run and a total
// budget (oldest pruned first). They leave with their run's line when its file rotates out.
import { readdirSync, rmSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { RunResult } from '../../sandbox/index.ts';
import { outFilePath } from '../../shared/out-names.ts';
import { withLockSync } from '../lock.ts';
import { ensurePrivateSubdir, isRealDir, readPrivateFileSync, writePrivateFileSync } from '../private-files.ts';
import { IMAGES_DIR, RUN_LOG_LOCK } from './files.ts';

const IMAGE_EXTENSIONS: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/gif': 'gif', 'image/webp': 'webp' };
// Images, and the files a run left in /work/out (`<run>-out-<i>.dat`, pruned with the images).
const IMAGE_FILE = /^[A-Za-z0-9-]+\.(png|jpg|gif|webp|dat)$/;

/** An image (`mime`) or a /work/out file (`path`) in a run-end line. */
export type BesideEntry = { mime?: string; path?: string; bytes: number; file?: string; skipped?: string };

export interface BesideLimits {
  maxImageBytesPerRun: number;
  maxImageBytes: number;
}

/**
 * Images, and the files from /work/out, go beside the log (0600; the panel shows them) within
 * one per-run budget, images first, then one prune under the lock; the log names each file.
 */
export function saveBeside(dir: string, result: RunResult, limits: BesideLimits): { images: BesideEntry[]; files?: BesideEntry[] } {
  const budget = { used: 0, saved: false };
  const images = result.images.map((image, i): BesideEntry => {
    const bytes = Buffer.from(image.data, 'base64');
    const ext = IMAGE_EXTENSIONS[image.mime];
    if (!ext) return { mime: image.mime, bytes: bytes.length };
    return { mime: image.mime, ...saveOne(dir, result.runId, `${i}.${ext}`, bytes, budget, limits) };
  });
  const files = result.files?.length
    ? result.files.map((out, i): BesideEntry => {
        // Logged by the name the result showed (cleaned: the sandbox chose it); saved under a name of ours.
        const path = outFilePath(out.path);
        if (out.data === undefined) return { path, bytes: out.bytes, ...(out.skipped ? { skipped: `not returned: ${out.skipped}` } : {}) };
        return { path, ...saveOne(dir, result.runId, `out-${i}.dat`, Buffer.from(out.data, 'base64'), budget, limits) };
      })
    : undefined;
  if (budget.saved) withLockSync(join(dir, RUN_LOG_LOCK), () => pruneImages(dir, limits), { timeoutMs: 1000 });
  return files ? { images, files } : { images };
}

function saveOne(
  dir: string,
  runId: string,
  suffix: string,
  bytes: Buffer,
  budget: { used: number; saved: boolean },
  limits: BesideLimits,
): { bytes: number; file?: string; skipped?: string } {
  if (!/^[A-Za-z0-9-]+$/.test(runId)) return { bytes: bytes.length };
  if (budget.used + bytes.length > limits.maxImageBytesPerRun)
    return { bytes: bytes.length, skipped: 'over the per-run image budget (images and /work/out files together)' };
  try {
    const images = join(dir, IMAGES_DIR);
    ensurePrivateSubdir(images);
    const file = `${runId}-${suffix}`;
    writePrivateFileSync(join(images, file), bytes);
    budget.used += bytes.length;
    budget.saved = true;
    return { bytes: bytes.length, file: `${IMAGES_DIR}/${file}` };
  } catch (error) {
    return { bytes: bytes.length, skipped: `not written: ${(error as Error).message}` };
  }
}

/** Keeps all images within their total budget, oldest first. */
function pruneImages(stateDir: string, limits: BesideLimits): void {
  const dir = join(stateDir, IMAGES_DIR);
  // Never list or remove files through a link planted as images/.
  if (!isRealDir(dir)) return;
  let files: Array<{ path: string; size: number; mtimeMs: number }>;
  try {
    files = readdirSync(dir)
      .filter((name) => IMAGE_FILE.test(name))
      .flatMap((name) => {
        try {
          const stat = statSync(join(dir, name));
          return [{ path: join(dir, name), size: stat.size, mtimeMs: stat.mtimeMs }];
        } catch {
          return [];
        }
      });
  } catch {
    return;
  }
  let total = files.reduce((sum, f) => sum + f.size, 0);
  files.sort((a, b) => a.mtimeMs - b.mtimeMs);
  for (const file of files) {
    if (total <= limits.maxImageBytes) break;
    rmSync(file.path, { force: true });
    total -= file.size;
  }
}

/** Removes the images of the runs whose end is in `file`, a log file that is leaving the log (read up to `maxFileBytes` and then some). */
export function dropImagesOf(dir: string, file: string, maxFileBytes: number): void {
  let text: string;
  try {
    // A link or FIFO rotated in is not read, and no image is removed through a linked images/.
    const bytes = isRealDir(join(dir, IMAGES_DIR)) ? readPrivateFileSync(file, maxFileBytes + 64 * 1024 * 1024) : undefined;
    if (!bytes) return;
    text = bytes.toString('utf8');
  } catch {
    return;
  }
  for (const line of text.split('\n')) {
    if (!line.includes('"run-end"') || !line.includes(`"${IMAGES_DIR}/`)) continue;
    try {
      const event = JSON.parse(line) as { type?: string; images?: Array<{ file?: unknown }>; files?: Array<{ file?: unknown }> };
      if (event.type !== 'run-end') continue;
      for (const image of [...(event.images ?? []), ...(event.files ?? [])]) {
        const name = typeof image.file === 'string' ? basename(image.file) : '';
        if (IMAGE_FILE.test(name)) rmSync(join(dir, IMAGES_DIR, name), { force: true });
      }
    } catch {
      // a half-written line: nothing to drop
    }
  }
}

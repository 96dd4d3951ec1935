// image-packages.json in the state dir: the distributions learned of each image, by its ID (or
// its packages tag), so that the next bridge's listing names them from its start without a
// container (clients that ignore tools/list_changed see it too). A cache, not a record: the
// first container of a run corrects it; concurrent writers may lose each other's entry (last
// write wins). Read as untrusted: size-capped, schema-checked, and dropped whole when it does not fit.
import { join } from 'node:path';
import { z } from 'zod';
import { MAX_DISTRIBUTION_NAME_CHARS, MAX_DISTRIBUTIONS, imageDistributions, type ImageDistributions } from '../sandbox/index.ts';
import { ensurePrivateDirAsync, readPrivateFile, writePrivateFile } from './private-files.ts';

export const IMAGE_PACKAGES_FILE = 'image-packages.json';
/** Images remembered; the least recently learned go first. */
export const MAX_REMEMBERED_IMAGES = 32;
/** A bigger file is not read (32 full entries fit in well under this). */
export const MAX_IMAGE_PACKAGES_FILE_BYTES = 2 * 1024 * 1024;

const entrySchema = z.object({
  /** The image key it was learned from (sandbox/image/distributions.ts imageKey): the ID, when known. */
  key: z.string().min(1).max(300),
  /** The configured sandbox.image it was learned under (for a person reading the file). */
  image: z.string().max(300).optional(),
  names: z.array(z.string().min(1).max(MAX_DISTRIBUTION_NAME_CHARS)).max(MAX_DISTRIBUTIONS),
  more: z.number().int().nonnegative().max(1_000_000),
  learnedAt: z.number().int().nonnegative(),
});
const fileSchema = z.object({ version: z.literal(1), images: z.record(z.string().min(1).max(300), entrySchema) });
type ImagesFile = z.infer<typeof fileSchema>;

async function readImages(stateDir: string): Promise<ImagesFile['images']> {
  const path = join(stateDir, IMAGE_PACKAGES_FILE);
  try {
    const text = await readPrivateFile(path, MAX_IMAGE_PACKAGES_FILE_BYTES);
    if (text === undefined) return {};
    const parsed = fileSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data.images : {};
  } catch {
    return {};
  }
}

/** What was last learned of the image known by `key` (distributions.ts imageKey); undefined when nothing is. */
export async function rememberedImagePackages(stateDir: string, key: string): Promise<ImageDistributions | undefined> {
  // Found by the key each entry records (an older file filed them by image name).
  const entry = Object.values(await readImages(stateDir)).find((e) => e.key === key);
  // Checked again as the kernel's report is: the file is only as trustworthy as the frame was.
  return entry ? imageDistributions(entry.names, entry.more) : undefined;
}

/**
 * What was last learned of an image that ran as `image` (its newest entry under that name): a
 * hint for a bridge's start, before the image's ID is known to find it by.
 */
export async function rememberedUnderName(stateDir: string, image: string): Promise<ImageDistributions | undefined> {
  const entry = Object.entries(await readImages(stateDir))
    .filter(([name, e]) => (e.image ?? name) === image)
    .sort(([, a], [, b]) => b.learnedAt - a.learnedAt)[0]?.[1];
  return entry ? imageDistributions(entry.names, entry.more) : undefined;
}

/** Records what an image's first container reported, by its key (`image`: the configured name it ran as). */
export async function rememberImagePackages(
  stateDir: string,
  image: string,
  key: string,
  found: ImageDistributions,
  now = Date.now(),
): Promise<void> {
  if (image.length > 300 || key.length > 300) return;
  const images = await readImages(stateDir);
  for (const [name, entry] of Object.entries(images)) if (entry.key === key) delete images[name];
  images[key] = { key, image, names: found.names.slice(0, MAX_DISTRIBUTIONS), more: Math.min(found.more, 1_000_000), learnedAt: now };
  const kept = Object.entries(images)
    .sort(([, a], [, b]) => b.learnedAt - a.learnedAt)
    .slice(0, MAX_REMEMBERED_IMAGES);
  await ensurePrivateDirAsync(stateDir);
  await writePrivateFile(
    join(stateDir, IMAGE_PACKAGES_FILE),
    JSON.stringify({ version: 1, images: Object.fromEntries(kept) } satisfies ImagesFile),
  );
}

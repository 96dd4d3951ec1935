// The third-party Python distributions a sandbox image has, as its kernel reports them in its
// first `ready` frame (the names of the *.dist-info and *.egg-info entries on sys.path: no
// import, well under a millisecond). Untrusted like every frame: capped by the frame schema,
// then checked, normalised and filtered here. Learned once per image, so that the listing can
// say "with packages" for a user's own image with numpy and friends preinstalled.
import { normalizeName } from '../../config/packages.ts';

/** The most names a `ready` frame may carry; the kernel sends at most this many and counts the rest. */
export const MAX_DISTRIBUTIONS = 500;
/** The longest name a `ready` frame may carry (the kernel leaves longer ones out, counted). */
export const MAX_DISTRIBUTION_NAME_CHARS = 100;
/** The most characters of names a summary shows; the rest are counted. */
export const MAX_DISTRIBUTIONS_TEXT_CHARS = 120;

/**
 * Packaging tools, not something code imports: the official python image has pip and nothing
 * else, and must still read "standard library only". Debian's python3 adds no distribution of
 * its own, so nothing else is left out: whatever an image's author installed is usable.
 */
const TOOLING_DISTRIBUTIONS: ReadonlySet<string> = new Set(['pip', 'setuptools', 'wheel', 'distribute']);

/** A project name as packaging allows it (PEP 508): letters and digits, inner ".", "_", "-". */
const NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;

export interface ImageDistributions {
  /** Sorted, one per project (the spelling first seen kept), tooling left out. */
  names: string[];
  /** Names the kernel or this check left out (over a cap, malformed). */
  more: number;
}

/** The distributions of a `ready` frame's (schema-checked) fields; none when it sent none. */
export function imageDistributions(names: readonly string[] | undefined, more = 0): ImageDistributions {
  const seen = new Map<string, string>();
  let dropped = more;
  for (const name of (names ?? []).slice(0, MAX_DISTRIBUTIONS)) {
    if (name.length > MAX_DISTRIBUTION_NAME_CHARS || !NAME.test(name)) {
      dropped++;
      continue;
    }
    const key = normalizeName(name);
    if (TOOLING_DISTRIBUTIONS.has(key) || seen.has(key)) continue;
    seen.set(key, name);
  }
  dropped += Math.max(0, (names?.length ?? 0) - MAX_DISTRIBUTIONS);
  const sorted = [...seen.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, name]) => name);
  return { names: sorted, more: dropped };
}

/**
 * The distributions a model most often reaches for, most common first: named before any other
 * wherever the sandbox's packages are told (the listing, the capabilities resource,
 * capability_summary(), import errors), so that a cut never hides scipy behind 20 others.
 * Compared by normalized name (PEP 503).
 */
export const NOTABLE_DISTRIBUTIONS: readonly string[] = [
  'numpy',
  'pandas',
  'matplotlib',
  'scipy',
  'requests',
  'scikit-learn',
  'polars',
  'pyarrow',
  'sympy',
  'seaborn',
  'statsmodels',
  'networkx',
  'pillow',
  'httpx',
  'aiohttp',
  'urllib3',
  'beautifulsoup4',
  'lxml',
  'pyyaml',
  'openpyxl',
  'python-dateutil',
  'pytz',
  'pydantic',
  'jinja2',
  'plotly',
  'torch',
  'tensorflow',
];

const NOTABLE_RANK: ReadonlyMap<string, number> = new Map(NOTABLE_DISTRIBUTIONS.map((name, i) => [name, i]));

/** The names in the order they are told: the notable ones first (in their order), then the rest alphabetically. */
export function orderedDistributions(names: readonly string[]): string[] {
  const keyed = names.map((name) => {
    const key = normalizeName(name);
    return { name, key, rank: NOTABLE_RANK.get(key) ?? NOTABLE_DISTRIBUTIONS.length };
  });
  keyed.sort((a, b) => a.rank - b.rank || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return keyed.map((k) => k.name);
}

/** Names a summary of the packages names at most; the rest are counted. */
export const MAX_NAMED_DISTRIBUTIONS = 8;

/**
 * The one summary of an image's distributions, wherever it is told: "numpy, matplotlib, scipy
 * and 37 more": the notable ones first, at most `maxNamed` names and `maxChars` characters of
 * them, then a count of the rest.
 */
export function distributionsText(
  found: ImageDistributions,
  maxNamed = MAX_NAMED_DISTRIBUTIONS,
  maxChars = MAX_DISTRIBUTIONS_TEXT_CHARS,
): string {
  const shown: string[] = [];
  let chars = 0;
  for (const name of orderedDistributions(found.names)) {
    if (shown.length >= maxNamed || chars + name.length + 2 > maxChars) break;
    shown.push(name);
    chars += name.length + 2;
  }
  const rest = found.names.length - shown.length + found.more;
  return shown.join(', ') + (rest > 0 ? `${shown.length > 0 ? ' and ' : ''}${rest} more` : '');
}

/**
 * What an image is known by: the derived image's tag (a hash of its base's ID and its
 * packages), else the base image's ID from the runtime check, else its name.
 */
export function imageKey(runtime: { image?: string | undefined; imageId?: string | undefined }, configured: string): string {
  return runtime.image ?? runtime.imageId ?? configured;
}

/** Images whose distributions a bridge keeps in memory (the base, a packages image or two). */
export const MAX_LEARNED_IMAGES = 16;

/** Each image's distributions by image key: the first report wins; the oldest image goes past the cap. */
export class LearnedImages {
  private readonly byKey = new Map<string, ImageDistributions>();
  private readonly max: number;

  constructor(max = MAX_LEARNED_IMAGES) {
    this.max = max;
  }

  /** Keeps the report of an image not known yet; false (and nothing changed) when it is known. */
  learn(key: string, found: ImageDistributions): boolean {
    if (this.byKey.has(key)) return false;
    if (this.byKey.size >= this.max) this.byKey.delete(this.byKey.keys().next().value!);
    this.byKey.set(key, found);
    return true;
  }

  get(key: string): ImageDistributions | undefined {
    return this.byKey.get(key);
  }

  get size(): number {
    return this.byKey.size;
  }
}

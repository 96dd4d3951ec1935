// The packages image build's output: each line as it is passed on (no colour codes or control
// characters, capped), and a failed build named by what pip said (no pip in the base image,
// the index unreachable, no such package) with pip's own words shortened, and the fix.
import { packagesSummary, type DerivedSpec } from './derived.ts';
import { SandboxError } from '../errors.ts';
import { clip } from '../../shared/clip.ts';

/** Characters of one progress line passed on (pip can print very long lines). */
export const MAX_PROGRESS_LINE_CHARS = 400;
const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g;
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f]/g;

/** Characters of pip's own words in an error message. */
export const MAX_PIP_WORDS_CHARS = 600;

export type BuildFailureKind = 'no-packages' | 'no-base' | 'no-pip' | 'index-unreachable' | 'not-found' | 'build-failed';

export class PackageBuildError extends SandboxError {
  override readonly name = 'PackageBuildError';
  readonly kind: BuildFailureKind;

  constructor(kind: BuildFailureKind, message: string) {
    super(message);
    this.kind = kind;
  }
}

const UNREACHABLE =
  /NewConnectionError|Failed to establish a new connection|Connection refused|Name or service not known|Temporary failure in name resolution|ConnectTimeout|Read timed out|Network is unreachable|ProxyError|SSLError|connection broken by/i;

/** Why a build failed, from the lines it printed: the kind, pip's own words, and the fix. */
export function describeBuildFailure(
  lines: readonly string[],
  spec: Pick<DerivedSpec, 'base' | 'index' | 'packages'>,
): { kind: BuildFailureKind; message: string } {
  const text = lines.join('\n');
  const pipWords = lines.filter((l) => /^(ERROR|error):/.test(l.trim()) || /No module named pip/.test(l)).map((l) => l.trim());
  const said = (pipWords.length > 0 ? pipWords : lines.slice(-3).map((l) => l.trim())).join(' | ');
  const words = clip(said, MAX_PIP_WORDS_CHARS);
  const head = `Building the sandbox image with ${packagesSummary(spec.packages)} failed`;
  const index = spec.index || 'the default index (PyPI)';
  if (/No module named pip/.test(text)) {
    return {
      kind: 'no-pip',
      message: `${head}: the image ${spec.base} has no pip (${words}). Fix: set sandbox.image to an image with pip (python:3.x-slim, or one with python3-pip installed), then build again.`,
    };
  }
  if (UNREACHABLE.test(text)) {
    return {
      kind: 'index-unreachable',
      message: `${head}: the package index ${index} could not be reached (pip: ${words}). Fix: check the network and sandbox.pipIndexUrl, then build again.`,
    };
  }
  const missing = /No matching distribution found for (\S+)/.exec(text)?.[1];
  if (missing) {
    return {
      kind: 'not-found',
      message: `${head}: ${index} has no package matching "${missing}" for this image's Python (pip: ${words}). Fix: correct the name or version in sandbox.packages.`,
    };
  }
  return { kind: 'build-failed', message: `${head}: ${words || 'no output'}. Fix: check sandbox.packages and the runtime's output above.` };
}

/**
 * One line of the build's output as it is passed on: without colour codes and other control
 * characters, cut to MAX_PROGRESS_LINE_CHARS; undefined for a blank line.
 */
export function progressLine(raw: string): string | undefined {
  const text = raw.replace(ANSI, '').replace(CONTROL, '').trimEnd();
  if (!text.trim()) return undefined;
  return clip(text, MAX_PROGRESS_LINE_CHARS);
}

/** Podman's own log lines (a podman build logs at debug level, see buildArgs): not progress. */
const PODMAN_LOG = /^time="[^"]*" level=(?:debug|info) msg=/;
const CONTAINER_ID = /^time="[^"]*" level=debug msg="Container ID: ([0-9a-f]{64})"$/;
const FIRST_RUN = /^STEP \d+\/\d+: RUN /;

/**
 * Reads a podman build's output for the ID of its build container, which podman leaves behind
 * when the build is stopped: only that container is removed then, never another build's from the
 * same base. Only the first ID podman logs counts, and none once the first RUN step has printed
 * a line of its own: from then on the output is the packages' own, and anything could be printed.
 * (Podman logs the ID on stderr just before the RUN step's header on stdout; the two may be
 * read in either order.)
 */
export function builderWatch(): { take(line: string): boolean; readonly id: string | undefined } {
  let id: string | undefined;
  let running = false;
  let untrusted = false;
  return {
    /** True for a line of podman's own log, which is not passed on. */
    take(line: string): boolean {
      const podman = PODMAN_LOG.test(line);
      if (FIRST_RUN.test(line)) running = true;
      else if (running && !podman && !line.startsWith('STEP ')) untrusted = true;
      if (!podman) return false;
      const found = untrusted || id !== undefined ? null : CONTAINER_ID.exec(line);
      if (found) id = found[1];
      return true;
    },
    get id() {
      return id;
    },
  };
}

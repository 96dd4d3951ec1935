// Building the derived image (derived.ts) with the runtime the sandbox uses: the
// Containerfile in a private temporary folder, the runtime's and pip's lines passed on as they
// come, and a failure named by what pip said (index unreachable, no such package, no pip in the
// base image) with the fix. The build is the only step with a network; runs stay --network none.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import type { SandboxConfig } from '../../config/schema.ts';
import {
  BUILD_LABEL,
  DERIVED_REPOSITORY,
  buildArgs,
  buildEnv,
  containerfile,
  derivedSpec,
  packagesState,
  packagesSummary,
  plainId,
  type DerivedSpec,
} from './derived.ts';
import { builderWatch, describeBuildFailure, PackageBuildError, progressLine } from './build-output.ts';
export { PackageBuildError } from './build-output.ts';
import { cliArgv, runCli } from '../engines/cli.ts';
import { imageExistsArgs } from '../engines/commands.ts';
import { runtimeForPull, type DetectOptions } from '../engines/detect.ts';

/** Lines kept for the error message. */
const TAIL_LINES = 200;
const DEFAULT_BUILD_TIMEOUT_MS = 30 * 60_000;

export interface BuildOutcome {
  runtime: string;
  tag: string;
  packages: string[];
  /** True when the image was already built for this base and list. */
  reused: boolean;
  durationMs: number;
  /** Derived images of an older base or list that are still there (in use by a container, or from a reused build). */
  stale: string[];
  /** Older derived images of the same base removed after this build. */
  removed: string[];
}

export interface BuildOptions {
  detect?: DetectOptions;
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** Builds in flight, by runtime command and tag: a second request joins the first. */
const inFlight = new Map<string, { promise: Promise<BuildOutcome>; listeners: Set<(line: string) => void> }>();

/** Builds the derived image for sandbox.packages, or says it is already there. */
export async function buildPackagesImage(
  sandbox: SandboxConfig,
  onProgress: (line: string) => void,
  options: BuildOptions = {},
): Promise<BuildOutcome> {
  if (sandbox.packages.length === 0) {
    throw new PackageBuildError(
      'no-packages',
      'sandbox.packages is empty: there is nothing to build. List the packages the sandbox needs, e.g. ["numpy", "pandas>=2"].',
    );
  }
  const runtime = await runtimeForPull(sandbox, options.detect);
  const cli = { ...(options.detect?.env ? { env: options.detect.env } : {}) };
  const baseId = await runCli(runtime.command, imageExistsArgs(sandbox.image), cli).then(
    (out) => out.stdout,
    () => undefined,
  );
  if (!baseId) {
    throw new PackageBuildError(
      'no-base',
      `The sandbox image ${sandbox.image} is not present in ${runtime.name}: pull it first (\`code-execution-mode pull\`), then build again.`,
    );
  }
  const spec = derivedSpec(sandbox, baseId);
  const key = `${runtime.command}\0${spec.tag}`;
  const running = inFlight.get(key);
  if (running) {
    onProgress(`A build of ${spec.tag} is already running; waiting for it.`);
    running.listeners.add(onProgress);
    return running.promise.finally(() => running.listeners.delete(onProgress));
  }
  const listeners = new Set([onProgress]);
  const emit = (line: string) => {
    for (const listener of listeners) listener(line);
  };
  const promise = (async () => {
    const state = await packagesState(runtime.command, sandbox, cli);
    const stale = state?.state === 'missing' ? state.stale : [];
    if (state?.state === 'built') {
      emit(`${spec.tag} is already built with ${packagesSummary(spec.packages)}.`);
      return { runtime: runtime.name, tag: spec.tag, packages: spec.packages, reused: true, durationMs: 0, stale, removed: [] };
    }
    return runBuild(runtime.name, runtime.command, spec, stale, emit, options);
  })();
  inFlight.set(key, { promise, listeners });
  try {
    return await promise;
  } finally {
    inFlight.delete(key);
  }
}

async function runBuild(
  runtimeName: 'podman' | 'docker',
  command: string,
  spec: DerivedSpec,
  stale: string[],
  emit: (line: string) => void,
  options: BuildOptions,
): Promise<BuildOutcome> {
  const started = Date.now();
  const cli = options.detect?.env ? { env: options.detect.env } : {};
  // A folder of our own with only the Containerfile: nothing else of the host goes to the build.
  const dir = await mkdtemp(join(tmpdir(), 'cem-build-'));
  try {
    const file = join(dir, 'Containerfile');
    await writeFile(file, containerfile(spec), { mode: 0o600 });
    const idFile = join(dir, 'image-id');
    emit(
      `Building ${spec.tag} from ${spec.base} with ${runtimeName}: ${packagesSummary(spec.packages)}${spec.index ? ` (index ${spec.index})` : ''}`,
    );
    const child = execa(command, cliArgv(command, buildArgs(runtimeName, spec, file, dir, idFile)), {
      reject: false,
      all: true,
      buffer: false,
      cwd: dir,
      env: { ...options.detect?.env, ...buildEnv(runtimeName) },
      timeout: options.timeoutMs ?? DEFAULT_BUILD_TIMEOUT_MS,
      // Podman removes its build container on an interrupt, not on SIGTERM; given time to.
      killSignal: 'SIGINT',
      forceKillAfterDelay: 30_000,
      ...(options.signal ? { cancelSignal: options.signal } : {}),
    });
    const tail: string[] = [];
    const builder = builderWatch();
    for await (const line of child.iterable({ from: 'all' })) {
      if (runtimeName === 'podman' && builder.take(String(line))) continue;
      const shown = progressLine(String(line));
      if (shown === undefined) continue;
      tail.push(shown);
      if (tail.length > TAIL_LINES) tail.shift();
      emit(shown);
    }
    const result = await child;
    if (result.failed && runtimeName === 'docker') await removeDockerLeftovers(command, spec, cli);
    if (result.failed && runtimeName === 'podman') {
      const stopped = result.isCanceled || result.timedOut || result.signal !== undefined;
      await removePodmanBuilder(command, spec, builder.id, stopped, cli, emit);
    }
    if (result.isCanceled) throw new PackageBuildError('build-failed', `The build of ${spec.tag} was cancelled.`);
    if (result.timedOut)
      throw new PackageBuildError(
        'build-failed',
        `The build of ${spec.tag} took longer than ${Math.round((options.timeoutMs ?? DEFAULT_BUILD_TIMEOUT_MS) / 1000)} s and was stopped.`,
      );
    if (result.failed) {
      const { kind, message } = describeBuildFailure(tail, spec);
      throw new PackageBuildError(kind, message);
    }
    await keepName(command, plainId(await readFile(idFile, 'utf8')), spec.tag, cli);
    const durationMs = Date.now() - started;
    emit(`Built ${spec.tag} in ${(durationMs / 1000).toFixed(1)} s. Runs use it from the next session on.`);
    const { removed, left } = await removeOlderImages(command, spec, stale, options.detect?.env);
    if (removed.length > 0) emit(`Removed older package images of ${spec.base}: ${removed.join(', ')}.`);
    if (left.length > 0)
      emit(
        `Older package images of ${spec.base} still in use, left: ${left.join(', ')} (\`${runtimeName} rmi\` removes them once unused).`,
      );
    return { runtime: runtimeName, tag: spec.tag, packages: spec.packages, reused: false, durationMs, stale: left, removed };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Older package images of a base kept after a build: another project's list may be among them. */
export const KEEP_OLDER_IMAGES = 2;

/**
 * Once the new image is built, the derived images an earlier list or base made (found by the
 * labels of `packagesState`) go, but for the KEEP_OLDER_IMAGES newest (a second project on the
 * same base keeps its image): only in our repository, never the new tag, and never forced, so an
 * image a container still runs (another bridge's session) stays and is named.
 */
async function removeOlderImages(
  command: string,
  spec: DerivedSpec,
  stale: readonly string[],
  env: NodeJS.ProcessEnv | undefined,
): Promise<{ removed: string[]; left: string[] }> {
  const removed: string[] = [];
  const left: string[] = [];
  const ours = stale.filter((tag) => tag !== spec.tag && tag.startsWith(`${DERIVED_REPOSITORY}:`));
  const created = await Promise.all(
    ours.map(async (tag) => {
      const out = await runCli(command, ['image', 'inspect', '--format', '{{.Created}}', tag], env ? { env } : {}).catch(() => ({
        stdout: '',
      }));
      return { tag, at: createdAt(out.stdout.trim()) };
    }),
  );
  created.sort((a, b) => b.at - a.at);
  for (const { tag } of created.slice(KEEP_OLDER_IMAGES)) {
    const ok = await runCli(command, ['rmi', tag], env ? { env } : {}).then(
      () => true,
      () => false,
    );
    (ok ? removed : left).push(tag);
  }
  return { removed, left };
}

/** An image's creation time as docker ("…T06:00:00.1Z") or podman ("… 06:00:00.1 +0000 UTC") prints it; 0 when unreadable. */
export function createdAt(text: string): number {
  const podman = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(\.\d+)? ([+-]\d\d)(\d\d)/.exec(text);
  const iso = podman ? `${podman[1]}T${podman[2]}${(podman[3] ?? '').slice(0, 4)}${podman[4]}:${podman[5]}` : text;
  const at = Date.parse(iso);
  return Number.isFinite(at) ? at : 0;
}

/**
 * The built image keeps its name. Podman 4 can lose a name set while another podman process
 * changes names at the same moment (two builds, a tag), though the build said it was tagged:
 * the name is checked by the ID the build wrote, and set again when it went.
 */
export async function keepName(command: string, id: string, tag: string, cli: { env?: NodeJS.ProcessEnv }): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const named = await runCli(command, ['image', 'inspect', '--format', '{{.Id}}', tag], cli).then(
      (out) => plainId(out.stdout),
      () => '',
    );
    if (named === id) return;
    if (attempt === NAME_ATTEMPTS)
      throw new PackageBuildError(
        'build-failed',
        `The image ${id.slice(0, 12)} was built, but the runtime did not keep its name ${tag}. Build again.`,
      );
    await runCli(command, ['tag', id, tag], cli).catch(() => undefined);
  }
}

/** How often a lost name is set again before the build fails. */
export const NAME_ATTEMPTS = 5;

/**
 * What a stopped podman build leaves: its build container, known by the ID the build logged (and
 * checked to be a build container from this base). Without that ID nothing is removed, since
 * another build from the same base may be going on; the build says what may be left.
 */
async function removePodmanBuilder(
  command: string,
  spec: DerivedSpec,
  id: string | undefined,
  stopped: boolean,
  cli: { env?: NodeJS.ProcessEnv },
  emit: (line: string) => void,
): Promise<void> {
  if (id === undefined) {
    if (stopped) emit('The build container of the stopped build may be left: `podman ps --all --external` lists it.');
    return;
  }
  const listed = await podmanBuilders(command, cli);
  const ours = listed
    .split('\n')
    .map((line) => line.trim().split('|'))
    .some(
      ([listedId, name = '', image = '']) =>
        listedId === id && /-working-container(-\d+)?$/.test(name) && image !== '' && spec.baseId.startsWith(plainId(image)),
    );
  if (ours) await runCli(command, ['rm', '--force', '--ignore', id], cli).catch(() => undefined);
}

/**
 * Podman's containers, build containers included (`ps --external`), as `ID|name|image ID` lines;
 * '' when they cannot be listed. Podman 4 fails the whole listing ("container not known") while
 * another process removes a build container, so a failed listing is tried again, a few times.
 */
export async function podmanBuilders(
  command: string,
  cli: { env?: NodeJS.ProcessEnv },
  pause: (ms: number) => Promise<unknown> = sleep,
): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await runCli(command, ['ps', '--all', '--external', '--no-trunc', '--format', '{{.ID}}|{{.Names}}|{{.ImageID}}'], cli))
        .stdout;
    } catch {
      if (attempt >= LISTING_ATTEMPTS) return '';
      await pause(200 * attempt);
    }
  }
}

export const LISTING_ATTEMPTS = 5;

/**
 * What a failed docker build leaves: the images of the steps before the one that failed, found
 * by the label of this build. (Podman removes its build container itself, on a failure and on
 * the interrupt a stopped build gets.)
 */
async function removeDockerLeftovers(command: string, spec: DerivedSpec, cli: { env?: NodeJS.ProcessEnv }): Promise<void> {
  // A stopped build's step container may still be going in the daemon for a moment, holding
  // its parent images: try again until they are gone, for a few seconds.
  for (let attempt = 0; attempt < LEFTOVER_ATTEMPTS; attempt++) {
    const images = await runCli(
      command,
      ['images', '--all', '--quiet', '--no-trunc', '--filter', `label=${BUILD_LABEL}=${spec.tag}`],
      cli,
    ).catch(() => ({ stdout: '' }));
    const ids = images.stdout
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
    if (ids.length === 0) return;
    // Newest first: each goes before its parent.
    for (const id of ids) await runCli(command, ['rmi', id], cli).catch(() => undefined);
    await sleep(500);
  }
}

const LEFTOVER_ATTEMPTS = 20;

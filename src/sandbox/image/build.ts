// Building the derived image (derived.ts) with the runtime the sandbox uses: the
// Containerfile in a private temporary folder, the runtime's and pip's lines passed on as they
// come, and a failure named by what pip said (index unreachable, no such package, no pip in the
// base image) with the fix. The build is the only step with a network; runs stay --network none.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import type { SandboxConfig } from '../../config/schema.ts';
import {
  BUILD_LABEL,
  DERIVED_REPOSITORY,
  buildArgs,
  buildBaseName,
  buildEnv,
  containerfile,
  derivedSpec,
  isBuilderOf,
  packagesState,
  packagesSummary,
  type DerivedSpec,
} from './derived.ts';
import { describeBuildFailure, PackageBuildError, progressLine } from './build-output.ts';
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
  const from = runtimeName === 'podman' ? buildBaseName(spec.tag, randomBytes(6).toString('hex')) : spec.baseId;
  try {
    if (from !== spec.baseId)
      await runCli(command, ['tag', spec.baseId, from], cli).catch((error: unknown) => {
        throw new PackageBuildError('build-failed', `${runtimeName} could not name ${spec.base} for the build: ${String(error)}`);
      });
    const file = join(dir, 'Containerfile');
    await writeFile(file, containerfile(spec, from), { mode: 0o600 });
    emit(
      `Building ${spec.tag} from ${spec.base} with ${runtimeName}: ${packagesSummary(spec.packages)}${spec.index ? ` (index ${spec.index})` : ''}`,
    );
    const child = execa(command, cliArgv(command, buildArgs(runtimeName, spec, file, dir)), {
      reject: false,
      all: true,
      buffer: false,
      cwd: dir,
      env: { ...options.detect?.env, ...buildEnv(runtimeName) },
      timeout: options.timeoutMs ?? DEFAULT_BUILD_TIMEOUT_MS,
      // Podman cleans up its build container on an interrupt, not on SIGTERM.
      killSignal: 'SIGINT',
      forceKillAfterDelay: 10_000,
      ...(options.signal ? { cancelSignal: options.signal } : {}),
    });
    const tail: string[] = [];
    for await (const line of child.iterable({ from: 'all' })) {
      const shown = progressLine(String(line));
      if (shown === undefined) continue;
      tail.push(shown);
      if (tail.length > TAIL_LINES) tail.shift();
      emit(shown);
    }
    const result = await child;
    if (result.failed) await removeLeftovers(runtimeName, command, spec, from, cli);
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
    // The name only (both arguments): `untag` with the image alone would drop all its names.
    if (from !== spec.baseId) await runCli(command, ['untag', from, from], cli).catch(() => undefined);
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
 * What a failed build leaves: podman's build container when the build was stopped (it removes
 * it itself otherwise), docker's images of the steps before the one that failed.
 */
async function removeLeftovers(
  runtime: 'podman' | 'docker',
  command: string,
  spec: DerivedSpec,
  from: string,
  cli: { env?: NodeJS.ProcessEnv },
): Promise<void> {
  if (runtime === 'podman') {
    // This build's container only, by the name of its own FROM: another build from the same
    // base (another project's, going on now) keeps its container.
    const listed = await runCli(command, ['ps', '--all', '--external', '--format', '{{.Names}}'], cli).catch(() => ({ stdout: '' }));
    const left = listed.stdout
      .split('\n')
      .map((name) => name.trim())
      .filter((name) => isBuilderOf(name, from));
    if (left.length > 0) await runCli(command, ['rm', '--force', ...left], cli).catch(() => undefined);
    return;
  }
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
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

const LEFTOVER_ATTEMPTS = 20;

// The derived sandbox image: the configured image plus the pip packages of sandbox.packages.
// Its tag is a hash of the base image's ID, the normalised list and the index, so a changed
// list or a re-pulled base names another image, and one that exists with its labels matching
// is current. Pure parts (tag, Containerfile, build arguments) and the state of one runtime.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { isLoopbackUrl, normalizePackages } from '../../config/packages.ts';
import type { RuntimeName, SandboxConfig } from '../../config/schema.ts';
import { runCli } from '../engines/cli.ts';
import { imageExistsArgs, LABEL } from '../engines/commands.ts';

/** Where pip installs: outside every writable mount, readable by the unprivileged sandbox user. */
export const PACKAGES_DIR = '/opt/code-execution-mode/packages';
export const DERIVED_REPOSITORY = 'localhost/code-execution-mode-sandbox';

/** Labels of a derived image: what it was built from, so that a stale one can be told. */
export const DERIVED_LABELS = {
  base: `${LABEL}.derived-from`,
  baseId: `${LABEL}.base-id`,
  packages: `${LABEL}.packages`,
  index: `${LABEL}.pip-index`,
} as const;
/** On every image of one build, intermediate ones included: what a failed build left is found by it. */
export const BUILD_LABEL = `${LABEL}.build-of`;

export type PackagesConfig = Pick<SandboxConfig, 'image' | 'packages' | 'pipIndexUrl'>;

export interface DerivedSpec {
  base: string;
  baseId: string;
  packages: string[];
  index: string;
  tag: string;
}

/** Image IDs as the runtimes print them, without the digest's algorithm (podman leaves it out). */
export function plainId(id: string): string {
  return id.trim().replace(/^sha256:/, '');
}

export function derivedSpec(sandbox: PackagesConfig, baseId: string): DerivedSpec {
  const packages = normalizePackages(sandbox.packages);
  const index = sandbox.pipIndexUrl ?? '';
  const id = plainId(baseId);
  const hash = createHash('sha256')
    .update(JSON.stringify({ base: id, packages, index }))
    .digest('hex')
    .slice(0, 20);
  return { base: sandbox.image, baseId: id, packages, index, tag: `${DERIVED_REPOSITORY}:${hash}` };
}

function derivedLabels(spec: DerivedSpec): Record<string, string> {
  return {
    [DERIVED_LABELS.base]: spec.base,
    [DERIVED_LABELS.baseId]: spec.baseId,
    [DERIVED_LABELS.packages]: JSON.stringify(spec.packages),
    [DERIVED_LABELS.index]: spec.index,
  };
}

/**
 * The Containerfile: FROM the base image's exact ID, pip into PACKAGES_DIR (on PYTHONPATH).
 * Exec form throughout: the requirements (validated, see config/packages.ts) never meet a shell.
 * `--target` installs beside the system's packages without touching them (and needs no
 * override of Debian's externally-managed marker). No pip configuration of the base image is
 * read (PIP_CONFIG_FILE=/dev/null): an extra index there would reach past the configured one.
 */
export function containerfile(spec: DerivedSpec): string {
  const pip = [
    'env',
    'PIP_CONFIG_FILE=/dev/null',
    'python3',
    '-m',
    'pip',
    'install',
    '--disable-pip-version-check',
    '--no-input',
    '--no-cache-dir',
    '--no-warn-script-location',
    '--progress-bar',
    'off',
    '--retries',
    '1',
    '--timeout',
    '30',
    '--target',
    PACKAGES_DIR,
    ...(spec.index ? ['--index-url', spec.index] : []),
    ...spec.packages,
  ];
  return [
    `FROM ${spec.baseId}`,
    `LABEL ${BUILD_LABEL}=${spec.tag}`,
    'USER root',
    `RUN ${JSON.stringify(pip)}`,
    `RUN ${JSON.stringify(['chmod', '-R', 'a+rX,go-w', PACKAGES_DIR])}`,
    `ENV PYTHONPATH=${PACKAGES_DIR}\${PYTHONPATH:+:\${PYTHONPATH}}`,
    '',
  ].join('\n');
}

/**
 * `build` for either runtime. The build is the only time the image gets a network: the host's
 * when the index is on loopback (a bridge network cannot reach the host's 127.0.0.1), the
 * runtime's default otherwise. Docker runs its classic builder (see buildEnv): the tag and
 * labels are flags, never Containerfile text.
 */
export function buildArgs(
  runtime: RuntimeName,
  spec: DerivedSpec,
  containerfilePath: string,
  contextDir: string,
  idFile?: string,
): string[] {
  const labels = Object.entries(derivedLabels(spec)).flatMap(([key, value]) => ['--label', `${key}=${value}`]);
  const network = spec.index && isLoopbackUrl(spec.index) ? ['--network', 'host'] : [];
  // Podman at debug level logs its build container's ID, which a stopped build removes (build-output.ts).
  const pull = runtime === 'podman' ? ['--pull=never', '--layers=false', '--log-level=debug'] : [];
  const id = idFile ? ['--iidfile', idFile] : [];
  return ['build', ...pull, '--force-rm', '--tag', spec.tag, ...labels, ...network, ...id, '--file', containerfilePath, contextDir];
}

/** Docker's BuildKit needs the buildx plugin, which some distributions leave out; the classic builder is always there. */
export function buildEnv(runtime: RuntimeName): Record<string, string> {
  return runtime === 'docker' ? { DOCKER_BUILDKIT: '0' } : {};
}

export type PackagesState =
  /** The derived image is present and matches: runs use it. */
  | { state: 'built'; tag: string; packages: string[] }
  /** Not built for this base and list; `stale` lists derived images of an older base or list. */
  | { state: 'missing'; tag: string; packages: string[]; stale: string[] }
  /** The base image itself is missing: nothing to derive from yet. */
  | { state: 'no-base'; packages: string[] };

type CliOptions = { timeoutMs?: number; env?: NodeJS.ProcessEnv };

const labelsSchema = z.record(z.string(), z.string()).nullable();

/** The derived image's state in one runtime; undefined when no packages are configured. */
export async function packagesState(command: string, sandbox: PackagesConfig, cli: CliOptions = {}): Promise<PackagesState | undefined> {
  if (sandbox.packages.length === 0) return undefined;
  const packages = normalizePackages(sandbox.packages);
  let baseId: string;
  try {
    baseId = (await runCli(command, imageExistsArgs(sandbox.image), cli)).stdout;
  } catch {
    return { state: 'no-base', packages };
  }
  const spec = derivedSpec(sandbox, baseId);
  const labels = await runCli(command, ['image', 'inspect', '--format', '{{json .Config.Labels}}', spec.tag], cli).then(
    (out) => labelsSchema.safeParse(JSON.parse(out.stdout)).data ?? null,
    () => null,
  );
  const expected = derivedLabels(spec);
  // The tag is a hash, but anything can be tagged so: the labels must say the same.
  if (labels && Object.entries(expected).every(([key, value]) => labels[key] === value)) return { state: 'built', tag: spec.tag, packages };
  const stale = await runCli(
    command,
    ['images', '--filter', `label=${DERIVED_LABELS.base}=${sandbox.image}`, '--format', '{{.Repository}}:{{.Tag}}'],
    cli,
  ).then(
    (out) =>
      out.stdout
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l && l !== spec.tag),
    () => [],
  );
  return { state: 'missing', tag: spec.tag, packages, stale };
}

/** "numpy, pandas (+3 more)": the packages as a person or a model reads them. */
export function packagesSummary(packages: readonly string[], max = 8): string {
  const shown = packages.slice(0, max).join(', ');
  return packages.length > max ? `${shown} (+${packages.length - max} more)` : shown;
}

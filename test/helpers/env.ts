// What the integration suites run against: real runtimes and a local sandbox image, as set
// up by .ci/run. A runtime that is asked for but unusable fails the suite rather than skip it.
import { defaultSandboxConfig, RUNTIME_NAMES, type RuntimeName, type SandboxConfig } from '../../src/config/schema.ts';

export const TEST_IMAGE = process.env.CEM_TEST_IMAGE ?? 'localhost/cem-sandbox:bookworm';

export function testRuntimes(): RuntimeName[] {
  const raw = process.env.CEM_TEST_RUNTIMES ?? 'podman,docker';
  const names = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const name of names) {
    if (!(RUNTIME_NAMES as readonly string[]).includes(name)) throw new Error(`CEM_TEST_RUNTIMES: unknown runtime "${name}"`);
  }
  return names as RuntimeName[];
}

export function testSandbox(runtime: RuntimeName, overrides: Partial<SandboxConfig> = {}): SandboxConfig {
  return defaultSandboxConfig({
    // Never WebAssembly in place of a container that failed: the container suites would pass without one.
    backend: 'container',
    runtime,
    image: TEST_IMAGE,
    memory: '256m',
    pids: 64,
    timeoutSeconds: 20,
    interruptGraceSeconds: 2,
    ...overrides,
  });
}

/** A local image with pip and Debian's matplotlib: the package-build and plot tests. */
export const TEST_DATA_IMAGE = process.env.CEM_TEST_DATA_IMAGE ?? 'localhost/cem-sandbox-data:bookworm';

/**
 * The sandboxes a suite of the Python API runs on: each container runtime, then WebAssembly
 * (its differences are its own tests'). `limits` are the sandbox keys both kinds share.
 */
export function apiSandboxes(limits: Partial<SandboxConfig> = {}): Array<{ label: string; sandbox: Partial<SandboxConfig> }> {
  return [
    ...testRuntimes().map((runtime) => ({
      label: runtime,
      sandbox: { backend: 'container' as const, runtime, image: TEST_IMAGE, ...limits },
    })),
    { label: 'wasm', sandbox: { backend: 'wasm' as const, ...limits } },
  ];
}

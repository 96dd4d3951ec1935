// `code-execution-mode build-image`: builds the sandbox image with sandbox.packages, printing
// the runtime's and pip's lines as they come. Exit 0 when the image is ready (built or already
// there), 3 when the build failed (the error names what pip said and the fix).
import type { SandboxConfig } from '../config/schema.ts';
import { buildPackagesImage } from '../sandbox/index.ts';

export async function buildImageCommand(sandbox: SandboxConfig, print: (line: string) => void, signal?: AbortSignal): Promise<number> {
  // Ctrl-C stops the build through its signal, so that what a stopped build leaves is removed.
  // `on`, not `once`: a handler that has gone looks like none to the exit hook that stops
  // children, which would then kill this process (and the build, uncleaned) at once.
  const interrupted = new AbortController();
  const stop = () => interrupted.abort();
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  try {
    const outcome = await buildPackagesImage(sandbox, print, {
      signal: signal ? AbortSignal.any([signal, interrupted.signal]) : interrupted.signal,
    });
    print(
      outcome.reused ? `Ready: ${outcome.tag} (already built).` : `Ready: ${outcome.tag} (${(outcome.durationMs / 1000).toFixed(1)} s).`,
    );
    return 0;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

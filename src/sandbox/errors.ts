// Named errors of the sandbox layer. Messages are written for the person or agent who reads
// them: what went wrong and what to do about it.

export class SandboxError extends Error {
  override readonly name: string = 'SandboxError';
}

/** No usable container runtime: not installed, daemon down, or the pinned one unusable. */
export class RuntimeUnavailableError extends SandboxError {
  override readonly name = 'RuntimeUnavailableError';
}

/** The configured image is not present locally (runs never pull implicitly). */
export class ImageMissingError extends SandboxError {
  override readonly name = 'ImageMissingError';
  readonly image: string;
  readonly runtime: string;

  /** `howToPull`: the fix the user has where the bridge runs (a VS Code command, a CLI flag). */
  constructor(image: string, runtime: string, howToPull?: string) {
    super(
      `The sandbox image "${image}" is not present in ${runtime}, and runs never download it by themselves. ` +
        `${howToPull ?? `Pull it once: \`code-execution-mode pull\` (or \`${runtime} pull ${image}\`), or start the bridge with --pull.`}`,
    );
    this.image = image;
    this.runtime = runtime;
  }
}

/** The container did not start or its kernel did not come up. */
export class SandboxStartError extends SandboxError {
  override readonly name = 'SandboxStartError';
}

/** The kernel broke the protocol (bad frame, oversized frame); its container is killed. */
export class ProtocolError extends SandboxError {
  override readonly name = 'ProtocolError';
}

/** Too many sessions are busy to open another one. */
export class SessionLimitError extends SandboxError {
  override readonly name = 'SessionLimitError';
}

export function isSandboxError(value: unknown): value is SandboxError {
  return value instanceof SandboxError;
}

// The sandbox as the rest of the product sees it: sessions and runs, the engines (container
// runtimes: detection, reports, workspace mounts) and images. Nothing outside src/sandbox
// imports a file inside it but this one.
export {
  candidates,
  checkSandbox,
  checkSandboxKept,
  locateConfigured,
  reportUses,
  type CheckName,
  type Fix,
  type RuntimeStatus,
  type SandboxReport,
} from './engines/detect.ts';
export { checkWasm, CONTAINER_ADVICE, type WasmStatus } from './wasm/check.ts';
export type { SandboxEngine } from './sandbox.ts';
export { locateRuntime } from './engines/locate.ts';
export { isGvisor } from './engines/oci-runtime.ts';
export { checkLabel, reportLines, stateLabel, tierWords } from './engines/report-text.ts';
export { workspaceTargets } from './engines/workspace-names.ts';
export { forbiddenMountDirs, mountsText, resolveWorkspaceMounts, workspaceRequested, workspaceTargetsOf } from './engines/workspace.ts';
export { isSandboxError } from './errors.ts';
export { buildPackagesImage } from './image/build.ts';
export { packagesState, packagesSummary, type PackagesState } from './image/derived.ts';
export {
  MAX_DISTRIBUTIONS,
  MAX_DISTRIBUTION_NAME_CHARS,
  distributionsText,
  imageDistributions,
  imageKey,
  type ImageDistributions,
  orderedDistributions,
} from './image/distributions.ts';
export { imageIdAtStart, pullImage } from './image/image.ts';
export { PACKAGES_RECHECK_MS, SESSION_NAME, SessionManager } from './sessions/manager.ts';
export {
  MAX_IMAGES_PER_RUN,
  MAX_IMAGE_BASE64_CHARS,
  MAX_OUT_FILES,
  MAX_OUT_FILE_BYTES,
  MAX_OUT_TOTAL_BYTES,
  type RunResult,
  type RunStatus,
  type SessionChange,
} from './sessions/run-result.ts';
export type { RefusedRequest, RequestContext, RequestHandler } from './sessions/run-requests.ts';
export type { Sandbox, SandboxTier } from './sandbox.ts';
export type { ExecuteOptions } from './sessions/manager.ts';
export type { EgressAnswer, EgressDecision, EgressHandler, EgressRecord, EgressTarget } from './egress/types.ts';
export { targetText } from './egress/target.ts';

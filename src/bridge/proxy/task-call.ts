// Tools that run as tasks (the catalog says which: execution.taskSupport "required" or "optional") are called through
// the SDK's task API: the call creates a task, the SDK polls it, and each new status is told as
// the call's progress ("task working: Analyzing content..."). The whole call is bounded by the
// call timeout; when the run stops (timeout, cancel) or the bound hits, the server is asked to
// cancel the task (tasks/cancel), so its work does not go on for nobody.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolResultSchema,
  ErrorCode,
  McpError,
  type CallToolRequest,
  type CallToolResult,
  type Progress,
  type Task,
} from '@modelcontextprotocol/sdk/types.js';

/** How long tasks/cancel is waited for once a task's call stopped. */
const CANCEL_MS = 5000;
/** Characters of a task's status message passed on as progress. */
const MAX_STATUS_CHARS = 300;
/** Statuses a task never leaves. */
const TERMINAL: ReadonlySet<Task['status']> = new Set(['completed', 'failed', 'cancelled']);

export interface TaskCallOptions {
  signal: AbortSignal;
  /** The whole call's bound (each of the SDK's requests gets it too). */
  timeout: number;
  onprogress?: (progress: Progress) => void;
}

/** Calls a tool as a task; resolves to its result, or throws like a plain call would. */
export async function callAsTask(
  client: Client,
  params: CallToolRequest['params'],
  options: TaskCallOptions,
  status: (progress: Progress) => void,
  cancelled: (taskId: string, answer: string) => void,
): Promise<CallToolResult> {
  const stop = new AbortController();
  const onAbort = () => stop.abort(options.signal.reason);
  if (options.signal.aborted) onAbort();
  else options.signal.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(
    () =>
      stop.abort(new McpError(ErrorCode.RequestTimeout, `Request timed out (the task did not finish within ${options.timeout / 1000} s)`)),
    options.timeout,
  );
  const stream = client.experimental.tasks.callToolStream(params, CallToolResultSchema, {
    task: {},
    signal: stop.signal,
    timeout: options.timeout,
    ...(options.onprogress ? { onprogress: options.onprogress, resetTimeoutOnProgress: false } : {}),
  });
  // The SDK notices a stop only between polls (after the server's pollInterval): raced here.
  const stopped = new Promise<never>((_resolve, reject) => {
    const fail = () =>
      reject(stop.signal.reason instanceof Error ? stop.signal.reason : new McpError(ErrorCode.RequestTimeout, 'the call was stopped'));
    if (stop.signal.aborted) fail();
    else stop.signal.addEventListener('abort', fail, { once: true });
  });
  stopped.catch(() => undefined);
  let taskId: string | undefined;
  let said = '';
  let count = 0;
  const tell = (task: Task) => {
    const message = `task ${task.status}${task.statusMessage ? `: ${task.statusMessage.slice(0, MAX_STATUS_CHARS)}` : ''}`;
    if (message === said) return;
    said = message;
    status({ progress: ++count, message });
  };
  try {
    for (;;) {
      const next = await Promise.race([stream.next(), stopped]);
      if (next.done) throw new McpError(ErrorCode.InternalError, 'the task ended without a result');
      const message = next.value;
      if (message.type === 'taskCreated' || message.type === 'taskStatus') {
        // A task in a terminal status is over (the spec lets none leave it): nothing to cancel.
        taskId = TERMINAL.has(message.task.status) ? undefined : message.task.taskId;
        tell(message.task);
      } else if (message.type === 'result') {
        taskId = undefined;
        return message.result;
      } else {
        // Whether the task still runs is its last status, never the error's wording (the server's text).
        throw message.error;
      }
    }
  } catch (error) {
    if (stop.signal.aborted && !(error instanceof McpError)) throw new McpError(ErrorCode.RequestTimeout, 'the call was stopped');
    throw error;
  } finally {
    clearTimeout(timer);
    options.signal.removeEventListener('abort', onAbort);
    if (!stop.signal.aborted) stop.abort();
    void stream.return(undefined).catch(() => undefined);
    // A task that may still run is cancelled (a finished one needs nothing).
    if (taskId !== undefined) {
      const id = taskId;
      await client.experimental.tasks.cancelTask(id, { timeout: CANCEL_MS }).then(
        (task) => cancelled(id, `its status now: ${task.status}`),
        (error: unknown) => cancelled(id, `the server answered: ${error instanceof Error ? error.message : String(error)}`),
      );
    }
  }
}

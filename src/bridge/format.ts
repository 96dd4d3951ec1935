// The compact text an agent reads after a run, and the structured content beside it.
import type { RunResult } from '../sandbox/session.ts';

export interface StructuredRun {
  [key: string]: unknown;
  status: RunResult['status'];
  stdout: string;
  stderr: string;
  value: string | null;
  error: RunResult['error'];
  durationMs: number;
  session: string;
  toolCalls: number;
  truncated: boolean;
  sessionLost: boolean;
  images: number;
  runId: string;
}

export function structuredRun(result: RunResult, toolCalls: number): StructuredRun {
  return {
    status: result.status,
    stdout: result.stdout,
    stderr: result.stderr,
    value: result.value,
    error: result.error,
    durationMs: Math.round(result.durationMs * 10) / 10,
    session: result.session,
    toolCalls,
    truncated: result.truncated,
    sessionLost: result.sessionLost,
    images: result.images.length,
    runId: result.runId,
  };
}

export function runText(result: RunResult, toolCalls: number): string {
  const parts: string[] = [];
  if (result.stdout) parts.push(result.stdout.replace(/\n$/, ''));
  if (result.stderr) parts.push(`[stderr]\n${result.stderr.replace(/\n$/, '')}`);
  if (result.value !== null) parts.push(`Out: ${result.value}`);
  if (result.error) {
    const traceback = result.error.traceback.replace(/\n$/, '');
    const headline = `${result.error.type}: ${result.error.message}`;
    parts.push(traceback && traceback.includes(result.error.message) ? traceback : [traceback, headline].filter(Boolean).join('\n'));
  }
  const notes: string[] = [];
  if (result.status !== 'ok') notes.push(result.status);
  if (result.sessionLost) notes.push(`session "${result.session}" was restarted: its state is lost`);
  if (result.omitted.stdout > 0) notes.push(`${result.omitted.stdout} characters of stdout omitted`);
  if (result.omitted.stderr > 0) notes.push(`${result.omitted.stderr} characters of stderr omitted`);
  if (result.omitted.images > 0) notes.push(`${result.omitted.images} images omitted`);
  if (toolCalls > 0) notes.push(`${toolCalls} tool call${toolCalls === 1 ? '' : 's'}`);
  if (parts.length === 0) parts.push('(no output)');
  if (notes.length > 0) parts.push(`[${notes.join('; ')}]`);
  return parts.join('\n');
}

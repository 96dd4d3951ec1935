// A tool's annotations (untrusted hints from its server) as the short mark search hits and the
// Tools view show: "read-only" or "destructive"; anything else (or a malformed value) gives none.

export type ToolHint = 'read-only' | 'destructive';

/** Whether a tool's annotations set that hint to true (a malformed value counts as unset). */
export function annotationFlag(annotations: unknown, key: 'readOnlyHint' | 'destructiveHint'): boolean {
  return (
    typeof annotations === 'object' &&
    annotations !== null &&
    !Array.isArray(annotations) &&
    (annotations as Record<string, unknown>)[key] === true
  );
}

/** "read-only" wins over "destructive" (as for confirmations: a read-only tool never asks). */
export function toolHint(annotations: unknown): ToolHint | undefined {
  if (annotationFlag(annotations, 'readOnlyHint')) return 'read-only';
  if (annotationFlag(annotations, 'destructiveHint')) return 'destructive';
  return undefined;
}

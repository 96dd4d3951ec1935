// A count with its noun, as every message, view and note of the product says it.

/** "1 tool call", "0 tool calls", "2 requests from servers" (an irregular plural given as `nouns`). */
export function plural(count: number, noun: string, nouns = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : nouns}`;
}

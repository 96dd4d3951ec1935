// Text cut to a length for messages, logs and labels: what is cut ends in "...", so the reader
// knows there was more. (Text from a proxied server shown to the user is capped by shown-text.ts
// instead, by characters rather than UTF-16 units.)

/** `text` when it fits in `max` UTF-16 units, else its first `max - 3` and "..." (`max` in all). */
export function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}

// Sizes as people read them, in every message of the bridge and the views: limits exactly when
// they are whole KiB or MiB, small sizes in bytes, other sizes rounded.
const KIB = 1024;
const MIB = 1024 * 1024;

/** Bytes that `chars` characters of base64 decode to at the most (a cap given in base64 characters). */
export function base64Capacity(chars: number): number {
  return Math.floor((chars * 3) / 4);
}

/** Bytes a base64 text decodes to: its capacity less its `=` padding. */
export function base64Bytes(data: string): number {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return base64Capacity(data.length) - padding;
}

/** "512 bytes", "9000 bytes", "64 KiB", "120 KiB", "10 MiB", "5.6 MiB". */
export function sizeText(bytes: number): string {
  if (bytes >= MIB) return bytes % MIB === 0 ? `${bytes / MIB} MiB` : `${(bytes / MIB).toFixed(1)} MiB`;
  if (bytes >= KIB && bytes % KIB === 0) return `${bytes / KIB} KiB`;
  // Under 10 KiB the exact count reads as easily, and a limit such as 2000 bytes stays exact.
  if (bytes < 10 * KIB) return `${bytes} bytes`;
  return `${Math.round(bytes / KIB)} KiB`;
}

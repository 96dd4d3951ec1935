// Text into the HTML of our webviews: every character that could open markup or end an attribute.
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** Text whose `backticked` spans (the checks' and problems' way of naming commands) show as code. */
export function escapeWithCode(text: string): string {
  return escapeHtml(text).replace(/`([^`\n]+)`/g, '<code>$1</code>');
}

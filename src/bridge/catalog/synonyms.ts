// How agents phrase intents vs how tools are named: "open a PR" is create_pull_request,
// "forget" is delete, "type into" is fill. Query words gain these related words (weighted
// lower than the words the agent used) before the BM25 search.
const GROUPS: string[][] = [
  ['create', 'open', 'make', 'new', 'add', 'start', 'insert'],
  ['delete', 'remove', 'forget', 'erase', 'drop', 'destroy'],
  ['update', 'edit', 'change', 'modify', 'set', 'close', 'reopen'],
  ['get', 'read', 'fetch', 'show', 'view', 'retrieve', 'see', 'look'],
  ['list', 'show', 'enumerate', 'all'],
  ['search', 'find', 'lookup', 'query', 'locate'],
  ['send', 'post', 'publish', 'notify', 'message', 'chat'],
  ['remember', 'memory', 'store', 'save', 'entity', 'observation', 'fact', 'note'],
  ['person', 'people', 'entity', 'user'],
  ['save', 'write', 'store', 'persist'],
  ['move', 'rename'],
  ['type', 'fill', 'enter', 'input'],
  ['javascript', 'js', 'script', 'evaluate', 'execute'],
  ['run', 'execute', 'evaluate'],
  ['approve', 'review'],
  ['sum', 'add', 'plus', 'total'],
  ['compress', 'gzip', 'zip', 'archive'],
  ['directory', 'folder', 'dir'],
  ['image', 'picture', 'photo', 'screenshot'],
  ['location', 'place', 'coordinates', 'address', 'geocode'],
  ['altitude', 'elevation', 'height'],
  ['navigate', 'go', 'visit', 'browse'],
  ['url', 'page', 'link', 'website', 'web'],
  ['reply', 'respond', 'answer'],
  ['emoji', 'reaction', 'react'],
  ['commit', 'history'],
  ['repository', 'repo', 'project'],
  ['pr', 'pull', 'request', 'merge'],
  ['issue', 'ticket', 'bug'],
  ['sql', 'query', 'database', 'table'],
  ['think', 'reason', 'thought', 'sequential'],
];

const RELATED = new Map<string, Set<string>>();
for (const group of GROUPS) {
  for (const word of group) {
    const related = RELATED.get(word) ?? new Set<string>();
    for (const other of group) if (other !== word) related.add(other);
    RELATED.set(word, related);
  }
}

/** Related words for each query word, excluding words the query already has. */
export function relatedWords(words: readonly string[]): string[] {
  const have = new Set(words);
  const out = new Set<string>();
  for (const word of words) for (const related of RELATED.get(word) ?? []) if (!have.has(related)) out.add(related);
  return [...out];
}

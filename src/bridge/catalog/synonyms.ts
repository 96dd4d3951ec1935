// How agents phrase intents vs how tools are named: "open a PR" is create_pull_request,
// "forget" is delete, "type into" is fill. Query words gain these related words (weighted
// lower than the words the agent used) before the search. Two strengths: ACTIONS are verbs
// that name the same operation (remove = delete), so a tool named by one answers a query
// using another almost as well; TOPICS are looser associations (memory ~ fact ~ note).
const ACTIONS: string[][] = [
  ['create', 'open', 'make', 'new', 'add', 'start', 'insert'],
  ['delete', 'remove', 'forget', 'erase', 'drop', 'destroy'],
  ['update', 'edit', 'change', 'modify', 'set', 'close', 'reopen'],
  ['get', 'read', 'fetch', 'show', 'view', 'retrieve', 'see', 'look'],
  ['list', 'show', 'enumerate', 'all'],
  ['search', 'find', 'lookup', 'look', 'locate'],
  ['send', 'post', 'publish', 'notify'],
  ['save', 'write', 'store', 'persist'],
  ['move', 'rename'],
  ['type', 'fill', 'enter', 'input'],
  ['run', 'execute', 'evaluate'],
  ['select', 'choose', 'pick'],
  ['reply', 'respond', 'answer'],
];

const TOPICS: string[][] = [
  ['send', 'message', 'chat'],
  ['remember', 'memory', 'store', 'save', 'entity', 'observation', 'fact', 'note'],
  ['person', 'people', 'entity', 'user'],
  ['javascript', 'js', 'script', 'evaluate', 'execute'],
  ['approve', 'review'],
  ['sum', 'add', 'plus', 'total'],
  ['compress', 'gzip', 'zip', 'archive'],
  ['directory', 'folder', 'dir'],
  ['image', 'picture', 'photo', 'screenshot'],
  ['location', 'place', 'coordinates', 'address', 'geocode'],
  ['altitude', 'elevation', 'height'],
  ['navigate', 'go', 'visit', 'browse'],
  ['url', 'page', 'link', 'website', 'web'],
  ['emoji', 'reaction', 'react'],
  ['commit', 'history'],
  ['repository', 'repo', 'project'],
  ['pr', 'pull', 'request', 'merge'],
  ['issue', 'ticket', 'bug'],
  ['sql', 'query', 'database', 'table'],
  ['search', 'query'],
  ['think', 'reason', 'thought', 'sequential'],
  ['multiple', 'several', 'many', 'batch', 'bulk'],
];

/** Strength of a related word, relative to the word itself. */
const ACTION_STRENGTH = 1;
const TOPIC_STRENGTH = 0.5;

const RELATED = new Map<string, Map<string, number>>();
function addGroups(groups: string[][], strength: number): void {
  for (const group of groups) {
    for (const word of group) {
      const related = RELATED.get(word) ?? new Map<string, number>();
      for (const other of group) if (other !== word && (related.get(other) ?? 0) < strength) related.set(other, strength);
      RELATED.set(word, related);
    }
  }
}
addGroups(ACTIONS, ACTION_STRENGTH);
addGroups(TOPICS, TOPIC_STRENGTH);

/** Every word of the table with its related words and their strengths. */
export function relatedTable(): ReadonlyMap<string, ReadonlyMap<string, number>> {
  return RELATED;
}

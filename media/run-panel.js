// The run panel's only script: its buttons ask the extension to act; images zoom on click;
// folded output unfolds a chunk at a time (the DOM stays bounded); search covers folded lines.
const vscode = acquireVsCodeApi();
const post = (message) => vscode.postMessage(message);
document.getElementById('export')?.addEventListener('click', () => post({ type: 'export' }));
document.getElementById('copy')?.addEventListener('click', () => post({ type: 'copy' }));
document.getElementById('save-snippet')?.addEventListener('click', () => post({ type: 'saveSnippet' }));
for (const button of document.querySelectorAll('button.save-file')) {
  button.addEventListener('click', () => post({ type: 'saveFile', index: Number(button.dataset.index) }));
}
for (const button of document.querySelectorAll('button.open-file')) {
  button.addEventListener('click', () => post({ type: 'openFile', index: Number(button.dataset.index) }));
}
for (const button of document.querySelectorAll('button.open-image')) {
  button.addEventListener('click', () => post({ type: 'openImage', index: Number(button.dataset.index) }));
}
for (const button of document.querySelectorAll('button.open-text')) {
  button.addEventListener('click', () => post({ type: 'openText', stream: button.dataset.stream }));
}
for (const image of document.querySelectorAll('img.zoomable')) {
  image.addEventListener('click', () => {
    image.classList.toggle('zoomed');
    image.title = image.classList.contains('zoomed') ? 'Click to fit' : 'Click to zoom';
  });
}

let streams = {};
try {
  streams = JSON.parse(document.getElementById('streams')?.textContent || '{}');
} catch {
  streams = {};
}
const linesOf = Object.fromEntries(Object.entries(streams).map(([name, text]) => [name, String(text).split('\n')]));
const CHUNK = 500;
const TAIL = 20;

for (const button of document.querySelectorAll('button.show-more')) {
  button.addEventListener('click', () => {
    const name = button.dataset.stream;
    const head = document.querySelector(`pre.head[data-stream="${name}"]`);
    const lines = linesOf[name];
    if (!head || !lines) return;
    const shown = Number(head.dataset.shown);
    const upTo = Math.min(shown + CHUNK, lines.length - TAIL);
    head.append(`\n${lines.slice(shown, upTo).join('\n')}`);
    head.dataset.shown = String(upTo);
    const fold = button.closest('.fold');
    const left = lines.length - TAIL - upTo;
    if (left <= 0) fold?.remove();
    else fold.querySelector('.hidden-count').textContent = `${left} lines hidden`;
  });
}

// Search: matching lines of every text, folded ones too, at most MAX_HITS listed.
const MAX_HITS = 100;
const search = document.getElementById('search');
const results = document.getElementById('search-results');
search?.addEventListener('input', () => {
  const query = search.value.toLowerCase();
  results.replaceChildren();
  results.hidden = !query;
  if (!query) return;
  let hits = 0;
  let total = 0;
  for (const [name, lines] of Object.entries(linesOf)) {
    lines.forEach((line, i) => {
      if (!line.toLowerCase().includes(query)) return;
      total++;
      if (hits >= MAX_HITS) return;
      hits++;
      const row = document.createElement('div');
      row.className = 'hit';
      const where = document.createElement('span');
      where.className = 'where';
      where.textContent = `${name}:${i + 1}`;
      const text = document.createElement('code');
      text.textContent = line.length > 300 ? `${line.slice(0, 300)}…` : line;
      row.append(where, ' ', text);
      results.append(row);
    });
  }
  const summary = document.createElement('div');
  summary.className = 'summary';
  summary.textContent = total === 0 ? 'No matches.' : total > hits ? `${total} matching lines; the first ${hits} shown.` : `${total} matching line${total === 1 ? '' : 's'}.`;
  results.prepend(summary);
});

// The run panel's only script: its buttons ask the extension to act.
const vscode = acquireVsCodeApi();
document.getElementById('export')?.addEventListener('click', () => vscode.postMessage({ type: 'export' }));
document.getElementById('copy')?.addEventListener('click', () => vscode.postMessage({ type: 'copy' }));
document.getElementById('save-snippet')?.addEventListener('click', () => vscode.postMessage({ type: 'saveSnippet' }));
for (const button of document.querySelectorAll('button.save-file')) {
  button.addEventListener('click', () => vscode.postMessage({ type: 'saveFile', index: Number(button.dataset.index) }));
}
for (const button of document.querySelectorAll('button.open-file')) {
  button.addEventListener('click', () => vscode.postMessage({ type: 'openFile', index: Number(button.dataset.index) }));
}

// The run panel's only script: its two buttons ask the extension to act.
const vscode = acquireVsCodeApi();
document.getElementById('export')?.addEventListener('click', () => vscode.postMessage({ type: 'export' }));
document.getElementById('copy')?.addEventListener('click', () => vscode.postMessage({ type: 'copy' }));
document.getElementById('save-snippet')?.addEventListener('click', () => vscode.postMessage({ type: 'saveSnippet' }));

// The Diagnose panel's only script: each button asks the extension to act; a fix is named by
// its position in the report, and the extension looks up what it does.
const vscode = acquireVsCodeApi();
document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('button[data-action]') : null;
  if (!button || button.disabled) return;
  const { action, runtime, fix } = button.dataset;
  if (action === 'fix') vscode.postMessage({ type: 'fix', runtime: Number(runtime), fix: Number(fix), action: button.dataset.do });
  else vscode.postMessage({ type: action });
});

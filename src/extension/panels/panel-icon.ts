// The icon of our panels' tabs, in each theme's colour: a tab draws the file as it is, so the
// light themes' black strokes would vanish on a dark or high contrast dark tab.
import * as vscode from 'vscode';

export function panelIcon(extensionUri: vscode.Uri): { light: vscode.Uri; dark: vscode.Uri } {
  return {
    light: vscode.Uri.joinPath(extensionUri, 'media', 'sandbox.svg'),
    dark: vscode.Uri.joinPath(extensionUri, 'media', 'sandbox-dark.svg'),
  };
}

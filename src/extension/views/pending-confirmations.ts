// Confirmations and network questions waiting for the user, made hard to miss. VS Code shows the
// bridge's question as an information notification that may go straight to the notification
// center, while the run just waits; so, from the run log (a 'confirmation' or 'network-question'
// asked and not yet answered, in a run still going), the extension shows a status bar item (warning colours) and a notification per
// question, both opening the notification list where VS Code's question is. Both go when the
// question is answered (a progress notification, as a warning message could not be taken back).
import * as vscode from 'vscode';
import type { StateFiles } from '../state-files.ts';
import {
  pendingConfirmations,
  pendingMessage,
  pendingNetworkMessage,
  pendingNetworkQuestions,
  pendingText,
  shownHostPort,
  type PendingConfirmation,
  type PendingNetworkQuestion,
} from './confirmation-text.ts';

/** VS Code's command that opens the notification center (where its question waits). */
const SHOW_NOTIFICATIONS = 'notifications.showList';

export class PendingConfirmationsStatus implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly files: StateFiles;
  private readonly subscription: vscode.Disposable;
  /** Questions already announced (each once), and how to take back each one's notification. */
  private readonly announced = new Map<string, () => void>();
  /** The questions open at the last look (read by the host tests). */
  pending: PendingConfirmation[] = [];
  /** The network questions open at the last look (read by the host tests). */
  pendingNetwork: PendingNetworkQuestion[] = [];

  constructor(files: StateFiles) {
    this.files = files;
    this.item = vscode.window.createStatusBarItem('codeExecutionMode.confirmations', vscode.StatusBarAlignment.Left, 1000);
    this.item.name = 'Code Execution Mode Confirmations';
    this.item.command = SHOW_NOTIFICATIONS;
    this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
    this.subscription = files.onDidChangeRuns(() => this.update());
    this.update();
  }

  /** The status bar item's text while shown, else undefined. */
  get text(): string | undefined {
    return this.pending.length + this.pendingNetwork.length > 0 ? this.item.text : undefined;
  }

  private update(): void {
    // This window's questions only: another window sharing the state dir shows its own.
    const runs = this.files.runs();
    this.pending = pendingConfirmations(runs, Date.now(), this.files.owner);
    this.pendingNetwork = pendingNetworkQuestions(runs, Date.now(), this.files.owner);
    const open = new Set([...this.pending, ...this.pendingNetwork].map(key));
    for (const [question, done] of this.announced) {
      if (open.has(question)) continue;
      done();
      this.announced.delete(question);
    }
    if (open.size === 0) {
      this.item.hide();
      return;
    }
    this.item.text = pendingText(this.pending, this.pendingNetwork);
    const waiting = [
      ...this.pending.map((q) => `${q.server}.${q.tool} (session "${q.session}")`),
      ...this.pendingNetwork.map((q) => `reaching ${shownHostPort(q)} (session "${q.session}")`),
    ];
    this.item.tooltip = `Waiting for your answer: ${waiting.join(', ')}. Click to show VS Code's question.`;
    this.item.show();
    for (const question of this.pending) if (!this.announced.has(key(question))) this.announce(key(question), pendingMessage(question));
    for (const question of this.pendingNetwork)
      if (!this.announced.has(key(question))) this.announce(key(question), pendingNetworkMessage(question));
  }

  /** A notification about the question, with a link to the notification list, until it is answered. */
  private announce(question: string, message: string): void {
    let done!: () => void;
    const answered = new Promise<void>((resolve) => (done = resolve));
    this.announced.set(question, done);
    void vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: `${message} [Show the question](command:${SHOW_NOTIFICATIONS})`,
      },
      () => answered,
    );
  }

  dispose(): void {
    for (const done of this.announced.values()) done();
    this.subscription.dispose();
    this.item.dispose();
  }
}

function key(question: PendingConfirmation | PendingNetworkQuestion): string {
  return 'host' in question
    ? `${question.run}\0${question.asked}\0${question.host}:${question.port}`
    : `${question.run}\0${question.asked}`;
}

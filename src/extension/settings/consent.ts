// The user's consent to what a workspace defines (consent-items.ts): decisions by definition
// hash in the extension's global state, mirrored into the decisions file the bridge reads live.
// The question comes when the user acts (Review…, Refresh Tools) or when a bridge first needs
// a server (its request file changes), one question for everything pending, never at start-up;
// a question closed without an answer is not asked again on the bridge's behalf this session.
import { readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import * as vscode from 'vscode';
import { consentRequestSchema } from '../../state/consent.ts';
import { ensurePrivateDir, ensurePrivateDirAsync, writePrivateFile } from '../../state/private-files.ts';
import {
  decisionsFileOf,
  decisionStoreSchema,
  notAllowed,
  questionText,
  type ConsentItem,
  type Decision,
  type DecisionStore,
} from './consent-items.ts';
import { DirWatcher } from '../dir-watcher.ts';
import { plural } from '../../shared/plural.ts';
import type { ConsentView } from '../views/tools-view.ts';

const STORE_KEY = 'consent.decisions';

export interface ConsentQuestion {
  items: ConsentItem[];
  message: string;
  detail: string;
}
/** `{ allow }`: these hashes are allowed, the rest of the question's items denied. */
export type ConsentAnswer = 'allow' | 'deny' | 'dismiss' | { allow: string[] };
/** Answers questions instead of the dialog (the host tests). */
export type ConsentResponder = (question: ConsentQuestion) => Promise<ConsentAnswer>;

export class WorkspaceConsent implements vscode.Disposable {
  readonly decisionsFile: string;
  readonly requestsFile: string;
  /** Every question asked this session, for the tests. */
  readonly questions: ConsentQuestion[] = [];
  private readonly memento: vscode.Memento;
  private readonly log: vscode.LogOutputChannel;
  private items: ConsentItem[] = [];
  private readonly dismissed = new Set<string>();
  private readonly requested = new Set<string>();
  private asking: Promise<void> | undefined;
  private responder: ConsentResponder | undefined;
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fired after decisions change (settings may read differently now). */
  readonly onDidChange = this.changed.event;
  private readonly watcher: DirWatcher;
  private timer: NodeJS.Timeout | undefined;

  /** `dir`: where the bridge's config lives; the two consent files go beside it. */
  constructor(memento: vscode.Memento, dir: string, log: vscode.LogOutputChannel) {
    this.memento = memento;
    this.log = log;
    this.decisionsFile = join(dir, 'bridge-consent.json');
    this.requestsFile = join(dir, 'bridge-consent-requests.json');
    this.watcher = new DirWatcher(
      dir,
      (file) => {
        if (file !== basename(this.requestsFile)) return;
        clearTimeout(this.timer);
        this.timer = setTimeout(() => void this.onRequest(), 100);
      },
      { prepare: ensurePrivateDir },
    );
  }

  decision(hash: string): Decision | undefined {
    return this.store()[hash]?.decision;
  }

  /** The items the current settings define (from readSettings). */
  setItems(items: ConsentItem[]): void {
    this.items = items;
  }

  /** The current items not allowed yet (undecided or declined). */
  pending(): ConsentItem[] {
    return notAllowed(this.items, (hash) => this.decision(hash));
  }

  /** What the Tools view shows: servers not allowed, and sandbox values set aside. */
  view(): ConsentView {
    const pending = this.pending();
    const declined = (item: ConsentItem) => this.decision(item.hash) === 'denied';
    return {
      servers: Object.fromEntries(
        pending
          .filter((i) => i.kind === 'server')
          .map((i) => [i.name, declined(i) ? ('declined' as const) : ('awaiting-consent' as const)]),
      ),
      notes: pending
        .filter((i) => i.kind === 'sandbox')
        .map(
          (i) =>
            `The workspace's codeExecutionMode.${i.name} ${declined(i) ? 'is not allowed' : 'awaits your consent'}: your own value is used. Review…`,
        ),
    };
  }

  /** Writes the decisions file; done at activation, before the bridge can start. */
  async writeDecisions(store: DecisionStore = this.store()): Promise<void> {
    await ensurePrivateDirAsync(dirname(this.decisionsFile));
    await writePrivateFile(this.decisionsFile, `${JSON.stringify(decisionsFileOf(store))}\n`);
  }

  setResponder(responder: ConsentResponder | undefined): void {
    this.responder = responder;
  }

  /** The user asked to review (all pending items, or one server's): asks even if declined before. */
  async review(name?: string): Promise<void> {
    const items = this.pending().filter((item) => name === undefined || item.name === name);
    if (items.length === 0) {
      void vscode.window.showInformationMessage(
        name ? `Nothing about "${name}" awaits your consent.` : 'Nothing from this workspace awaits your consent.',
      );
      return;
    }
    await this.ask(items);
  }

  /** Forgets decisions: what they allowed is no longer used, and is asked about again. */
  async revoke(hashes: readonly string[]): Promise<void> {
    const store = { ...this.store() };
    for (const hash of hashes) delete store[hash];
    await this.save(store);
    for (const hash of hashes) this.dismissed.delete(hash);
  }

  /** Manage Server Consent: every decision, newest first; picking one revokes it. */
  async manage(): Promise<void> {
    type Pick = vscode.QuickPickItem & { hash?: string; review?: true };
    const current = new Set(this.items.map((i) => i.hash));
    const decisions = Object.entries(this.store()).sort(([, a], [, b]) => (a.at < b.at ? 1 : -1));
    const pending = this.pending();
    const picks: Pick[] = [
      ...(pending.length > 0
        ? [{ label: `$(shield) Review ${plural(pending.length, 'item')} awaiting your consent…`, review: true as const }]
        : []),
      ...decisions.map(([hash, r]) => ({
        label: `${r.decision === 'allowed' ? '$(pass)' : '$(circle-slash)'} ${r.kind === 'server' ? r.name : `codeExecutionMode.${r.name}`}`,
        description: `${r.decision}${current.has(hash) ? ' · this workspace' : ''} · ${r.at.slice(0, 10)}`,
        detail: `${r.where} · ${r.facts.join(' · ')}`,
        hash,
      })),
    ];
    if (picks.length === 0) {
      void vscode.window.showInformationMessage(
        "No consent decisions yet: servers from a workspace's settings are asked about when they are first needed.",
      );
      return;
    }
    const chosen = await vscode.window.showQuickPick(picks, { title: 'Server consent: pick a decision to revoke it', matchOnDetail: true });
    if (chosen?.review) return this.review();
    if (!chosen?.hash) return;
    const sure = await vscode.window.showWarningMessage(
      `Revoke this decision? ${chosen.label.replace(/^\$\([^)]*\) /, '')} will be asked about again, and is not used until allowed.`,
      { modal: true },
      'Revoke',
    );
    if (sure === 'Revoke') await this.revoke([chosen.hash]);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.watcher.dispose();
    this.changed.dispose();
  }

  /** A bridge needed servers nobody decided on: ask about them, unless the user closed that question. */
  private async onRequest(): Promise<void> {
    let hashes: string[];
    try {
      const request = consentRequestSchema.parse(JSON.parse(await readFile(this.requestsFile, 'utf8')));
      hashes = request.servers.map((s) => s.hash);
    } catch {
      return;
    }
    for (const hash of hashes) this.requested.add(hash);
    // Decided in another window (global state is shared): only this window's file lags behind.
    if (hashes.some((hash) => this.decision(hash) !== undefined)) {
      await this.writeDecisions().catch((error: Error) => this.log.error(`could not write ${this.decisionsFile}: ${error.message}`));
      this.changed.fire();
    }
    await this.askRequested();
  }

  private async askRequested(): Promise<void> {
    if (this.asking) return;
    const items = this.pending().filter(
      (i) => this.requested.has(i.hash) && !this.dismissed.has(i.hash) && this.decision(i.hash) === undefined,
    );
    if (items.length > 0) await this.ask(items);
  }

  /** One question at a time; what was requested meanwhile is asked about afterwards. */
  private async ask(items: ConsentItem[]): Promise<void> {
    if (this.asking) return this.asking;
    this.asking = (async () => {
      const question: ConsentQuestion = { items, ...questionText(items) };
      this.questions.push(question);
      this.log.info(`asking for consent: ${items.map((i) => i.name).join(', ')}`);
      const answer = await (this.responder ?? showQuestion)(question);
      await this.record(items, answer);
    })().finally(() => (this.asking = undefined));
    await this.asking;
    await this.askRequested();
  }

  private async record(items: ConsentItem[], answer: ConsentAnswer): Promise<void> {
    if (answer === 'dismiss') {
      for (const item of items) this.dismissed.add(item.hash);
      this.log.info(`consent question closed without an answer: ${items.map((i) => i.name).join(', ')}`);
      return;
    }
    const allowed = new Set(answer === 'allow' ? items.map((i) => i.hash) : answer === 'deny' ? [] : answer.allow);
    const store = { ...this.store() };
    const at = new Date().toISOString();
    for (const item of items) {
      const decision = allowed.has(item.hash) ? 'allowed' : 'denied';
      store[item.hash] = { decision, kind: item.kind, name: item.name, where: item.where, facts: item.facts, at };
      this.log.info(`consent ${decision}: ${item.kind} ${item.name} (${item.where})`);
    }
    await this.save(store);
  }

  private async save(store: DecisionStore): Promise<void> {
    await this.memento.update(STORE_KEY, store);
    await this.writeDecisions(store).catch((error: Error) => this.log.error(`could not write ${this.decisionsFile}: ${error.message}`));
    this.changed.fire();
  }

  private store(): DecisionStore {
    const parsed = decisionStoreSchema.safeParse(this.memento.get(STORE_KEY) ?? {});
    return parsed.success ? parsed.data : {};
  }
}

/** The dialog: modal, with every item's facts; "Choose…" picks item by item. */
async function showQuestion(question: ConsentQuestion): Promise<ConsentAnswer> {
  const buttons = question.items.length > 1 ? ['Allow', 'Choose…', "Don't Allow"] : ['Allow', "Don't Allow"];
  const choice = await vscode.window.showWarningMessage(question.message, { modal: true, detail: question.detail }, ...buttons);
  if (choice === 'Allow') return 'allow';
  if (choice === "Don't Allow") return 'deny';
  if (choice !== 'Choose…') return 'dismiss';
  const picks = await vscode.window.showQuickPick(
    question.items.map((item) => ({
      label: item.kind === 'server' ? item.name : `codeExecutionMode.${item.name}`,
      description: item.where,
      detail: item.facts.join(' · '),
      hash: item.hash,
    })),
    { canPickMany: true, title: 'Allow the checked items; the others are not allowed', matchOnDetail: true },
  );
  return picks ? { allow: picks.map((p) => p.hash) } : 'dismiss';
}

// Read-only documents holding planned file contents, for the diff editor: nothing is written.
import * as vscode from 'vscode';

export const PLAN_SCHEME = 'belay-plan';

export class PlannedContents implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly contents = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private counter = 0;

  /** A new read-only document with `text`, named after `fileName` (its extension picks the language). */
  create(fileName: string, text: string): vscode.Uri {
    const id = String(++this.counter);
    const uri = vscode.Uri.from({ scheme: PLAN_SCHEME, path: `/${id}/${fileName}` });
    this.contents.set(uri.toString(), text);
    // Keep memory bounded: only the latest previews stay.
    if (this.contents.size > 200) this.contents.delete(this.contents.keys().next().value!);
    return uri;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.toString()) ?? '';
  }

  dispose(): void {
    this.changed.dispose();
    this.contents.clear();
  }
}

// Read-only documents holding planned file contents, for the diff editor: nothing is written. A
// block's preview remembers its block, so the diff can apply it (whole, or some of its changes).
import * as vscode from 'vscode';
import type { LensArguments } from './core/lenses.ts';

export const PLAN_SCHEME = 'belay-plan';

export class PlannedContents implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly contents = new Map<string, string>();
  private readonly blocks = new Map<string, LensArguments>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private counter = 0;

  /**
   * A new read-only document with `text`, named after `fileName` (its extension picks the
   * language); `block`: the block whose result it shows, which it can apply.
   */
  create(fileName: string, text: string, block?: LensArguments): vscode.Uri {
    const id = String(++this.counter);
    const uri = vscode.Uri.from({ scheme: PLAN_SCHEME, path: `/${id}/${fileName}` });
    this.contents.set(uri.toString(), text);
    if (block) this.blocks.set(uri.toString(), block);
    // Keep memory bounded: only the latest previews stay.
    if (this.contents.size > 200) {
      const oldest = this.contents.keys().next().value!;
      this.contents.delete(oldest);
      this.blocks.delete(oldest);
    }
    return uri;
  }

  /** The block a preview shows, when it shows one. */
  blockOf(uri: vscode.Uri): LensArguments | undefined {
    return this.blocks.get(uri.toString());
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.toString()) ?? '';
  }

  dispose(): void {
    this.changed.dispose();
    this.contents.clear();
    this.blocks.clear();
  }
}

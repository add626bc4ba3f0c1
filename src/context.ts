import * as vscode from 'vscode';
import { Config } from './config.ts';
import { errorMessage } from './shared/errors.ts';
import { Trust, UntrustedError } from './trust.ts';

/**
 * The owner of every lifetime in Belay: features get this object, register what they create on
 * it, and everything is disposed with the extension.
 */
export class BelayContext implements vscode.Disposable {
  readonly log: vscode.LogOutputChannel;
  readonly config: Config;
  readonly trust: Trust;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly viewResolved = new vscode.EventEmitter<string>();
  private readonly resolved = new Set<string>();
  private readonly testSeams: Record<string, unknown> = {};

  readonly extension: vscode.ExtensionContext;

  constructor(extension: vscode.ExtensionContext) {
    this.extension = extension;
    this.log = this.own(vscode.window.createOutputChannel('Belay', { log: true }));
    this.config = this.own(new Config(this.log));
    this.trust = this.own(new Trust());
    this.own(this.viewResolved);
  }

  /** Takes ownership of a disposable and returns it. */
  own<T extends vscode.Disposable>(disposable: T): T {
    this.disposables.push(disposable);
    return disposable;
  }

  /**
   * Registers a feature's commands: the one way Belay registers commands. Each is owned here
   * (disposed with the extension) and runs inside one boundary: an error is logged and shown to
   * the person once, with a way to the log; a refusal for lack of trust was already explained.
   */
  registerCommands(commands: CommandTable): void {
    for (const [id, handler] of Object.entries(commands)) {
      this.own(
        vscode.commands.registerCommand(id, async (...args: unknown[]) => {
          try {
            return await handler(...args);
          } catch (error) {
            this.reportError(id, error);
            return undefined;
          }
        }),
      );
    }
  }

  /**
   * The commands' boundary, for a feature that runs one of its command functions directly (a
   * notification's button, say): the error logged under `id` and shown once, with a way to the log.
   */
  reportError(id: string, error: unknown): void {
    // The person was already told why (with a way to manage trust): nothing more to report.
    if (error instanceof UntrustedError) return;
    const message = errorMessage(error);
    this.log.error(`${id} failed: ${message}`);
    void vscode.window.showErrorMessage(`Belay: ${message}`, 'Show Log').then((choice) => {
      if (choice) this.log.show();
    });
  }

  /** Features call this when one of their views has shown content for the first time. */
  markViewResolved(viewId: string): void {
    if (this.resolved.has(viewId)) return;
    this.resolved.add(viewId);
    this.log.debug(`view ${viewId} resolved`);
    this.viewResolved.fire(viewId);
  }

  /** Offers a feature's test seams as `api.test[feature]`, only when running under Belay's integration tests. */
  exposeForTests(feature: string, seams: unknown): void {
    if (this.extension.extensionMode === vscode.ExtensionMode.Test) this.testSeams[feature] = seams;
  }

  /** What `activate` returns: used by Belay's own integration tests and by other extensions. */
  get api(): BelayApi {
    return {
      resolvedViews: () => [...this.resolved],
      onDidResolveView: this.viewResolved.event,
      ...(Object.keys(this.testSeams).length > 0 ? { test: { ...this.testSeams } } : {}),
    };
  }

  dispose(): void {
    for (const d of this.disposables.splice(0).reverse()) {
      try {
        d.dispose();
      } catch (error) {
        console.error('Belay: dispose failed', error);
      }
    }
  }
}

/** A command's handler: its arguments are whatever VS Code or the caller passes, to be checked. */
export type CommandHandler = (...args: unknown[]) => unknown;

/** A feature's commands by id (each id also in package.json's `contributes.commands`, or internal). */
export type CommandTable = Readonly<Record<`belay.${string}`, CommandHandler>>;

export interface BelayApi {
  resolvedViews(): string[];
  onDidResolveView: vscode.Event<string>;
  /** Each feature's test seams, by feature; present only in ExtensionMode.Test. */
  test?: Readonly<Record<string, unknown>>;
}

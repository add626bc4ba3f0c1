import * as vscode from 'vscode';

/**
 * Workspace trust in one place. Every capability an untrusted workspace must not have is named
 * here with the one sentence that says why it is refused; features ask `require(what)` at the
 * moment they would do it, and read `trusted` where they only decide what to show.
 */
export type Capability = 'applyBlocks' | 'runCommands' | 'continueSession' | 'watchInbox' | 'runAgents' | 'terminalPath' | 'installCommands';

const refusals: Record<Capability, string> = {
  applyBlocks: 'Belay applies no command block in an untrusted workspace: an answer could change any file.',
  runCommands: 'Belay runs no command from an answer in an untrusted workspace: it could do anything.',
  continueSession: 'Belay continues no session in an untrusted workspace: its answers would be applied.',
  watchInbox: 'Belay does not watch the inbox in an untrusted workspace: answers dropped there would be applied.',
  runAgents: 'Belay runs no agent, task or micro-agent in an untrusted workspace: agents run commands and tasks run their test scripts.',
  terminalPath: "Belay does not put its cueme on the terminal's PATH in an untrusted workspace.",
  installCommands: 'Belay installs no command on your PATH from an untrusted workspace.',
};

/** Thrown by `assert` so a command stops where it stands; the person has already been told why. */
export class UntrustedError extends Error {
  override name = 'UntrustedError';
  readonly capability: Capability;
  constructor(capability: Capability) {
    super(refusals[capability]);
    this.capability = capability;
  }
}

export class Trust implements vscode.Disposable {
  private readonly granted = new vscode.EventEmitter<void>();
  /** Fires once the person trusts the workspace (trust is never taken back without a reload). */
  readonly onDidGrant = this.granted.event;
  private readonly subscription = vscode.workspace.onDidGrantWorkspaceTrust(() => this.granted.fire());

  get trusted(): boolean {
    return vscode.workspace.isTrusted;
  }

  /** Why `what` is refused here, or undefined when it is allowed: for views that say it in place. */
  refusal(what: Capability): string | undefined {
    return this.trusted ? undefined : refusals[what];
  }

  /**
   * True when `what` may happen. Otherwise the person is told why, with a way to manage trust, and
   * the answer is false.
   */
  require(what: Capability): boolean {
    if (this.trusted) return true;
    void vscode.window.showWarningMessage(refusals[what], 'Manage Workspace Trust').then((choice) => {
      if (choice) void vscode.commands.executeCommand('workbench.trust.manage');
    });
    return false;
  }

  /** Like `require`, but throws `UntrustedError` (which command boundaries do not report again). */
  assert(what: Capability): void {
    if (!this.require(what)) throw new UntrustedError(what);
  }

  dispose(): void {
    this.subscription.dispose();
    this.granted.dispose();
  }
}

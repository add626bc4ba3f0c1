// How the editor runs an LLM's shell commands (RUN_COMMAND): sandboxed unless the person chose the
// unsandboxed shell in `belay.blocks.commandSandbox`; the sandbox's network as
// `belay.blocks.commandNetwork` says, or, when it says `ask`, as the person answered for this
// workspace (asked once, before the first command that would run there, and kept in the
// workspace's state). The editor's session loop never asks: without an answer its commands have
// no network. Whether the sandbox works here is found once and said in the confirmation.
import * as os from 'node:os';
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import type { SandboxSupport, ShellPolicy } from '../shared/commandSandbox.ts';

// Loaded with the first command, not at activation.
const sandboxCore = () => require('../shared/commandSandbox.ts') as typeof import('../shared/commandSandbox.ts');

/** The workspace-state key of the person's answer to the network question (true: allowed). */
export const NETWORK_ANSWER_KEY = 'belay.blocks.commandNetworkAllowed';

/** The modal questions the editor asks about commands; Belay's host tests replace `ask` to answer them. */
export interface CommandQuestions {
  ask(message: string, options: vscode.MessageOptions, ...items: string[]): Thenable<string | undefined>;
}

export const ALLOW_NETWORK = 'Allow Network';
export const NO_NETWORK = 'No Network';

export class CommandShell {
  private readonly ctx: BelayContext;
  readonly questions: CommandQuestions;
  private support: Promise<SandboxSupport> | undefined;

  constructor(ctx: BelayContext, questions: CommandQuestions) {
    this.ctx = ctx;
    this.questions = questions;
  }

  /** Whether the sandbox works here, found once per window. */
  sandbox(): Promise<SandboxSupport> {
    return (this.support ??= sandboxCore().detectSandbox());
  }

  /**
   * The policy for a command about to run. `ask`: the network question may be asked (the Run lens,
   * Apply All); undefined when the person dismissed it (nothing runs then).
   */
  async policy(ask: boolean): Promise<ShellPolicy | undefined> {
    const cuesHome = this.ctx.config.get('cues.home').trim().replace(/^~(?=$|\/)/, os.homedir());
    const hidden = cuesHome ? [cuesHome] : [];
    if (this.ctx.config.get('blocks.commandSandbox') === 'unsandboxed') {
      return { mode: 'unsandboxed', network: true, chosenBy: 'setting belay.blocks.commandSandbox', hidden };
    }
    const setting = this.ctx.config.get('blocks.commandNetwork');
    if (setting !== 'ask') return { mode: 'sandboxed', network: setting === 'on', hidden };
    const state = this.ctx.extension.workspaceState;
    const known = state.get<unknown>(NETWORK_ANSWER_KEY);
    if (typeof known === 'boolean') return { mode: 'sandboxed', network: known, hidden };
    // Without a sandbox the network question means nothing: the command gets the network anyway.
    if (!ask || !(await this.sandbox()).ok) return { mode: 'sandboxed', network: false, hidden };
    const choice = await this.questions.ask(
      'May the LLM\'s commands in this workspace reach the network?',
      {
        modal: true,
        detail:
          'Belay runs them sandboxed: the workspace and a private /tmp writable, the system read-only, your credentials hidden. ' +
          'With the network, a command can download packages, and also send what it can read anywhere. ' +
          'Asked once for this workspace; the setting belay.blocks.commandNetwork decides for every workspace instead.',
      },
      ALLOW_NETWORK,
      NO_NETWORK,
    );
    if (choice !== ALLOW_NETWORK && choice !== NO_NETWORK) return undefined;
    await state.update(NETWORK_ANSWER_KEY, choice === ALLOW_NETWORK);
    return { mode: 'sandboxed', network: choice === ALLOW_NETWORK, hidden };
  }

  /** Forgets this workspace's answer to the network question: the next command asks again. */
  async forgetNetworkAnswer(): Promise<void> {
    await this.ctx.extension.workspaceState.update(NETWORK_ANSWER_KEY, undefined);
  }

  /**
   * Whether the next `policy(true)` would ask the network question: the confirmation then says
   * the network is asked next (the question comes only once the person chose to run).
   */
  async networkPending(): Promise<boolean> {
    if (this.ctx.config.get('blocks.commandSandbox') === 'unsandboxed' || this.ctx.config.get('blocks.commandNetwork') !== 'ask') return false;
    if (typeof this.ctx.extension.workspaceState.get<unknown>(NETWORK_ANSWER_KEY) === 'boolean') return false;
    return (await this.sandbox()).ok;
  }

  /** The one line that says how the command runs (confirmation, terminal header); `pending`: the network is asked next. */
  async describe(policy: ShellPolicy, pending = false): Promise<string> {
    const line = sandboxCore().shellDescription(policy, policy.mode === 'sandboxed' ? await this.sandbox() : { ok: false, reason: '' });
    return pending ? line.replace(/network (on|off)$/, 'the network asked next') : line;
  }
}

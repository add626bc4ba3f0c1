// "Belay: Chat with Micro-agent": a terminal conversation with a nanobot micro-agent. Each line
// the person types runs the agent once with a fresh envelope, or, while a rich micro-agent with
// allowInjection runs, reaches it as an inject frame; progress shows at once (⏳),
// messages as they come, media as file links. Its workspace (and so each user's data) is
// `.belay/micro-agents/<name>/` in the workspace folder, kept between chats.
import * as path from 'node:path';
import * as vscode from 'vscode';
import { errorMessage } from '../shared/errors.ts';
import { BelayPseudoterminal } from '../ui/pseudoterminal.ts';
import { resolveDir, terminalConfig, type MicroAgent } from './core/agents/agents.ts';
import { ansi, sanitizeTerminalText } from './core/records/format.ts';
import type { NanobotEvent, NanobotLauncher, NanobotSession } from './core/protocols/nanobot.ts';
import { MEDIA_PREFIX } from './terminal.ts';

export interface ChatOptions {
  agent: MicroAgent;
  /** The bot's workspace; users/<chat>/ inside it holds per-user data. */
  workspace: string;
  secrets: () => Promise<ReadonlyMap<string, string>>;
  /** Why nothing may run now (untrusted workspace), checked before each message. */
  refusal: () => string | undefined;
  log: vscode.LogOutputChannel;
  /**
   * Where each message runs the micro-agent: a container or the sandbox, or 'local' only when the
   * person chose it (see backends/nanobot-launch.ts); throws when no isolated place works.
   */
  launcher: () => Promise<NanobotLauncher | 'local'>;
}

/** How the chat names a micro-agent run on the host (chosen by the person). */
const LOCAL_PLACE = 'locally, without isolation: it reaches your files and the network';

/** What a line typed while the micro-agent answers becomes. */
const BUSY_PROMPT = ansi.cyan('you ↳');

export class ChatTerminal extends BelayPseudoterminal {
  readonly #options: ChatOptions;
  #line = '';
  #busy: { controller: AbortController; session?: NanobotSession } | undefined;
  /** A line being typed while the micro-agent answers is on screen (below its output). */
  #inputShown = false;
  /** Where the last message ran, said again only when it changes. */
  #place: string | undefined;
  /** The places the chat's messages ran in: their environments (kept per bot between messages) end with the chat. */
  readonly #launchers = new Set<NanobotLauncher>();

  constructor(options: ChatOptions) {
    // The transcript is what Belay's integration tests read.
    super(1_000_000);
    this.#options = options;
    this.whenEnded(() => {
      for (const launcher of this.#launchers) void launcher.dispose?.().catch((error: unknown) => options.log.warn(`micro-agent ${options.agent.name}: its environment did not end: ${errorMessage(error)}`));
      this.#launchers.clear();
    });
  }

  protected override onOpen(): void {
    const a = this.#options.agent;
    const injecting = a.protocol === 'rich' && a.allowInjection;
    this.#print(`${ansi.bold(`Chat with ${a.name}`)} ${ansi.dim(`(${a.protocol}, timeout ${a.timeout} s${injecting ? ', follow-up lines go to it while it runs' : ''})`)}\n`);
    const how = injecting
      ? 'Each line you send starts the micro-agent, or goes to it while it runs; Ctrl+D while it runs ends its input.'
      : 'Each line you send runs the micro-agent once.';
    this.#print(ansi.dim(`${how} Its data: ${path.join(this.#options.workspace, 'users')}\nCtrl+C stops a reply; Ctrl+D or closing the terminal ends the chat.\n`));
    this.#prompt();
  }

  protected override onClosedByPerson(): void {
    this.#busy?.controller.abort();
  }

  #print(text: string): void {
    this.write(text);
  }

  /** Output while a line is being typed: above that line, which is drawn again below it. */
  #printAbove(text: string): void {
    if (!this.#inputShown) return this.#print(text);
    this.#print(`\r\x1b[2K${text}${BUSY_PROMPT} ${this.#line}`);
  }

  #prompt(): void {
    this.#print(`\n${ansi.cyan('you ›')} `);
  }

  override handleInput(data: string): void {
    const busy = this.#busy;
    if (data === '\x03') {
      if (busy) {
        busy.controller.abort();
        this.#printAbove(ansi.yellow('^C stopping the micro-agent…\n'));
      } else {
        this.#line = '';
        this.#print('^C');
        this.#prompt();
      }
      return;
    }
    if (data === '\x04') {
      if (!busy) this.exit(0);
      else if (busy.session?.accepting) {
        busy.session.endInput();
        this.#printAbove(ansi.dim('(its input is closed: the micro-agent reads no more lines)\n'));
      }
      return;
    }
    for (const ch of data) {
      if (ch === '\r' || ch === '\n') {
        const text = this.#line;
        if (this.#busy) {
          if (text.trim() !== '') this.#followUp(text);
          continue;
        }
        this.#line = '';
        this.#print('\n');
        if (text.trim() === '') this.#prompt();
        else void this.send(text);
      } else if (ch === '\x7f' || ch === '\b') {
        if (this.#line.length > 0) {
          this.#line = [...this.#line].slice(0, -1).join('');
          this.#print('\b \b');
        }
      } else if (ch >= ' ') {
        if (this.#busy && !this.#inputShown) {
          this.#inputShown = true;
          this.#print(`${BUSY_PROMPT} `);
        }
        this.#line += ch;
        this.#print(ch);
      }
    }
  }

  /** A line sent while the micro-agent runs: an inject frame, or kept in the input with the reason. */
  #followUp(text: string): void {
    const session = this.#busy?.session;
    const refusal = session ? session.inject(text) : { message: 'the micro-agent is still starting' };
    if (refusal) {
      this.#printAbove(ansi.yellow(`Not sent: ${refusal.message}. Your line is kept: press Enter again once the reply is complete.\n`));
      return;
    }
    this.#options.log.debug(`micro-agent ${this.#options.agent.name}: follow-up line sent`);
    this.#line = '';
    this.#inputShown = false;
    this.#print(`\n`);
  }

  /** Sends one message (what pressing Enter does); resolves when the reply is complete. */
  async send(text: string): Promise<void> {
    const busy: { controller: AbortController; session?: NanobotSession } = { controller: new AbortController() };
    this.#busy = busy;
    const { controller } = busy;
    try {
      const refusal = this.#options.refusal();
      if (refusal) {
        this.#print(ansi.red(`${refusal}\n`));
        return;
      }
      const agent = this.#options.agent;
      const config = terminalConfig(agent, await this.#options.secrets(), process.execPath);
      const log = this.#options.log;
      const show = (event: NanobotEvent) => {
        if (event.type === 'progress') this.#printAbove(ansi.dim(`⏳ ${sanitizeTerminalText(event.text)}\n`));
        else if (event.type === 'message') {
          let shown = event.text !== '' ? `${ansi.green(`${agent.name} ›`)} ${sanitizeTerminalText(event.text)}\n` : '';
          for (const file of event.media) shown += `${MEDIA_PREFIX}${sanitizeTerminalText(file)}\n`;
          if (shown) this.#printAbove(shown);
        } else if (event.type === 'error') this.#printAbove(ansi.red(`Error: ${sanitizeTerminalText(event.text)}${event.code ? ` [${event.code}]` : ''}\n`));
        else {
          // Logs go to Belay's log at their own level, never to the chat.
          const line = `micro-agent ${agent.name} [${event.level}]: ${event.text}`;
          if (event.level === 'warning') log.warn(line);
          else log[event.level](line);
        }
      };
      // The nanobot runner (and the process layer under it) loads with the first message.
      const { startNanobot } = await import('./core/protocols/nanobot.ts');
      const launcher = await this.#options.launcher();
      if (launcher !== 'local') this.#launchers.add(launcher);
      const place = launcher === 'local' ? LOCAL_PLACE : (launcher.label ?? 'isolated');
      if (place !== this.#place) {
        this.#place = place;
        this.#printAbove(launcher === 'local' ? ansi.yellow(`runs ${place}\n`) : ansi.dim(`runs in ${place}\n`));
      }
      busy.session = await startNanobot({
        config,
        input: { text, workspace: this.#options.workspace, chatId: 'vscode', channel: 'vscode' },
        onEvent: show,
        signal: controller.signal,
        launcher,
      });
      const result = await busy.session.result;
      if (controller.signal.aborted) this.#printAbove(ansi.yellow('(stopped)\n'));
      log.info(`micro-agent ${agent.name}: ${result.ok ? 'ok' : 'failed'} (exit ${result.exitCode ?? 'none'}) in ${resolveDir(agent.baseDir, agent.cwd)}`);
    } catch (error) {
      this.#printAbove(ansi.red(`Error: ${errorMessage(error)}\n`));
    } finally {
      this.#busy = undefined;
      // A line typed meanwhile and not sent stays, at the new prompt.
      if (this.#inputShown) this.#print('\r\x1b[2K');
      this.#inputShown = false;
      this.#print(`\n${ansi.cyan('you ›')} ${this.#line}`);
    }
  }
}

// "Belay: Chat with Micro-agent": a terminal conversation with a nanobot micro-agent. Each line
// the person types runs the agent once with a fresh envelope; progress shows at once (⏳),
// messages as they come, media as file links. Its workspace (and so each user's data) is
// `.belay/micro-agents/<name>/` in the workspace folder, kept between chats.
import * as path from 'node:path';
import * as vscode from 'vscode';
import { errorMessage } from '../shared/errors.ts';
import { resolveDir, terminalConfig, type MicroAgent } from './core/agents.ts';
import { ansi, sanitizeTerminalText } from './core/format.ts';
import type { NanobotEvent, NanobotLauncher } from './core/protocols/nanobot.ts';
import { BufferedTerminalOutput, MEDIA_PREFIX } from './terminal.ts';

export interface ChatOptions {
  agent: MicroAgent;
  /** The bot's workspace; users/<chat>/ inside it holds per-user data. */
  workspace: string;
  secrets: () => Promise<ReadonlyMap<string, string>>;
  /** Why nothing may run now (untrusted workspace), checked before each message. */
  refusal: () => string | undefined;
  log: vscode.LogOutputChannel;
  /** Where each message runs the micro-agent (a container, say); a child process when it gives none. */
  launcher?: () => Promise<NanobotLauncher | undefined>;
}

export class ChatTerminal implements vscode.Pseudoterminal {
  readonly #output = new BufferedTerminalOutput(1_000_000);
  readonly #close = new vscode.EventEmitter<number | void>();
  readonly onDidWrite = this.#output.onDidWrite;
  readonly onDidClose = this.#close.event;
  readonly #options: ChatOptions;
  #line = '';
  #busy: AbortController | undefined;

  constructor(options: ChatOptions) {
    this.#options = options;
  }

  get transcript(): string {
    return this.#output.transcript;
  }

  open(): void {
    this.#output.open();
    const a = this.#options.agent;
    this.#print(`${ansi.bold(`Chat with ${a.name}`)} ${ansi.dim(`(${a.protocol}, timeout ${a.timeout} s)`)}\n`);
    this.#print(ansi.dim(`Each line you send runs the micro-agent once. Its data: ${path.join(this.#options.workspace, 'users')}\nCtrl+C stops a reply; Ctrl+D or closing the terminal ends the chat.\n`));
    this.#prompt();
  }

  close(): void {
    this.#busy?.abort();
  }

  #print(text: string): void {
    this.#output.write(text);
  }

  #prompt(): void {
    this.#print(`\n${ansi.cyan('you ›')} `);
  }

  handleInput(data: string): void {
    if (data === '\x03') {
      if (this.#busy) {
        this.#busy.abort();
        this.#print(ansi.yellow('\n^C stopping the micro-agent…\n'));
      } else {
        this.#line = '';
        this.#print('^C');
        this.#prompt();
      }
      return;
    }
    if (data === '\x04' && !this.#busy) {
      this.#close.fire(0);
      return;
    }
    if (this.#busy) return; // typing while the agent answers is ignored, not queued
    for (const ch of data) {
      if (ch === '\r' || ch === '\n') {
        const text = this.#line;
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
        this.#line += ch;
        this.#print(ch);
      }
    }
  }

  /** Sends one message (what pressing Enter does); resolves when the reply is complete. */
  async send(text: string): Promise<void> {
    const controller = new AbortController();
    this.#busy = controller;
    try {
      const refusal = this.#options.refusal();
      if (refusal) {
        this.#print(ansi.red(`${refusal}\n`));
        return;
      }
      const agent = this.#options.agent;
      const config = terminalConfig(agent, await this.#options.secrets(), process.execPath);
      const show = (event: NanobotEvent) => {
        if (event.type === 'progress') this.#print(ansi.dim(`⏳ ${sanitizeTerminalText(event.text)}\n`));
        else if (event.type === 'message') {
          if (event.text !== '') this.#print(`${ansi.green(`${agent.name} ›`)} ${sanitizeTerminalText(event.text)}\n`);
          for (const file of event.media) this.#print(`${MEDIA_PREFIX}${sanitizeTerminalText(file)}\n`);
        } else if (event.type === 'error') this.#print(ansi.red(`Error: ${sanitizeTerminalText(event.text)}${event.code ? ` [${event.code}]` : ''}\n`));
        else this.#options.log.debug(`micro-agent ${agent.name} [${event.level}]: ${event.text}`);
      };
      // The nanobot runner (and the process layer under it) loads with the first message.
      const { runNanobot } = await import('./core/protocols/nanobot.ts');
      const launcher = await this.#options.launcher?.();
      const result = await runNanobot({
        config,
        input: { text, workspace: this.#options.workspace, chatId: 'vscode', channel: 'vscode' },
        onEvent: show,
        signal: controller.signal,
        ...(launcher ? { launcher } : {}),
      });
      if (controller.signal.aborted) this.#print(ansi.yellow('(stopped)\n'));
      this.#options.log.info(`micro-agent ${agent.name}: ${result.ok ? 'ok' : 'failed'} (exit ${result.exitCode ?? 'none'}) in ${resolveDir(agent.baseDir, agent.cwd)}`);
    } catch (error) {
      this.#print(ansi.red(`Error: ${errorMessage(error)}\n`));
    } finally {
      this.#busy = undefined;
      this.#prompt();
    }
  }

  dispose(): void {
    this.#output.dispose();
    this.#close.dispose();
  }
}

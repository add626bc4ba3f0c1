// Stopping a command inside a container when Belay ends it (its timeout, an abort), not only
// when the phase's container stops. Killing the engine's `exec` client leaves the program and
// whatever it started running inside, so the backend must learn that the client was killed and
// kill inside itself:
// - every command carries its own mark: a variable (COMMAND_VARIABLE=<random id>) that its
//   descendants inherit, setsid or double-forked;
// - its host command is a short bash wrapper that connects to this watch over loopback TCP
//   (bash's /dev/tcp: no program to start), says `start <id>` and, when the engine's client
//   ends by itself, `end <id>`. A connection that closes without `end` is a client that was
//   killed (Belay kills the command's whole process group with SIGKILL), so `onEnded(id, true)` runs
//   the kill inside (see programs/kill-command.sh).
// What a command cannot shed was looked for: a PID namespace of its own (unshare --pid) needs
// CAP_SYS_ADMIN, which containers do not have; a user namespace beside it runs the command as an
// unmapped user (mapping root needs CAP_SETFCAP); cgroups are read-only inside. So the mark is the
// variable, and the kill also takes every process whose parent it takes: a program must both clear
// its environment and leave its parent to outlive its command's kill; it then dies with the phase.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import * as net from 'node:net';
import { programText } from '../../../shared/programText.ts';

/** The variable that marks every process of one command inside a container. */
export const COMMAND_VARIABLE = 'BELAY_COMMAND';

/** The command's wrapper, run with bash (programs/command-watch.sh). */
const WRAPPER = programText(import.meta.url, './programs/command-watch.sh');

/** Stops and kills one command's processes inside (programs/kill-command.sh). */
const KILL_SCRIPT = programText(import.meta.url, './programs/kill-command.sh');

/** The command line, run inside the container as the command's user, that kills command `id`'s processes. */
export function killCommandArgv(id: string): [string, ...string[]] {
  return ['/bin/sh', '-c', KILL_SCRIPT, 'belay-kill', id, COMMAND_VARIABLE];
}

/** Watches the engine clients of a session's commands; see the file's comment. */
export class CommandWatch {
  readonly #server: net.Server;
  readonly #bash: string | undefined;
  readonly #onEnded: (id: string, killed: boolean) => void;
  readonly #live = new Set<net.Socket>();
  #port = 0;
  #closed = false;

  private constructor(onEnded: (id: string, killed: boolean) => void, bash: string | undefined) {
    this.#onEnded = onEnded;
    this.#bash = bash;
    this.#server = net.createServer((socket) => this.#watch(socket));
    this.#server.on('error', () => undefined);
  }

  /**
   * A watch listening on loopback; without bash on the host, one that wraps nothing. `onEnded`
   * hears of each watched command's end, `killed` when its client did not end by itself.
   */
  static async open(onEnded: (id: string, killed: boolean) => void, bash = '/bin/bash'): Promise<CommandWatch> {
    const watch = new CommandWatch(onEnded, existsSync(bash) ? bash : undefined);
    if (watch.#bash === undefined) return watch;
    await new Promise<void>((resolve, reject) => {
      watch.#server.once('error', reject);
      watch.#server.listen(0, '127.0.0.1', () => resolve());
    });
    watch.#port = (watch.#server.address() as net.AddressInfo).port;
    return watch;
  }

  /** A fresh id for one command. */
  static id(): string {
    return randomBytes(12).toString('hex');
  }

  /** The host command line that runs `argv` (the engine's client) watched under `id`. */
  wrap(argv: [string, ...string[]], id: string): [string, ...string[]] {
    if (this.#bash === undefined || this.#closed) return argv;
    return [this.#bash, '-c', WRAPPER, 'belay-watch', String(this.#port), id, ...argv];
  }

  #watch(socket: net.Socket): void {
    if (this.#closed || this.#live.size >= 4096) {
      socket.destroy();
      return;
    }
    this.#live.add(socket);
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      if (text.length < 200) text += chunk;
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.#live.delete(socket);
      const started = /^start ([0-9a-f]{24})\n/.exec(text);
      if (this.#closed || started === null) return;
      this.#onEnded(started[1]!, !text.includes(`\nend ${started[1]}\n`));
    });
  }

  /** Stops watching: later ends call nothing. */
  close(): void {
    this.#closed = true;
    this.#server.close();
    for (const socket of this.#live) socket.destroy();
    this.#live.clear();
  }
}

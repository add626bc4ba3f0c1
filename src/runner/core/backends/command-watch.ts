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
//   the kill inside (see KILL_SCRIPT).
// What a command cannot shed was looked for: a PID namespace of its own (unshare --pid) needs
// CAP_SYS_ADMIN, which containers do not have; a user namespace beside it runs the command as an
// unmapped user (mapping root needs CAP_SETFCAP); cgroups are read-only inside. So the mark is the
// variable, and the kill also takes every process whose parent it takes: a program must both clear
// its environment and leave its parent to outlive its command's kill; it then dies with the phase.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import * as net from 'node:net';

/** The variable that marks every process of one command inside a container. */
export const COMMAND_VARIABLE = 'BELAY_COMMAND';

// $1: the watch's port, $2: the command's id, then the engine's command line. The connection is
// best effort: without it the command runs unwatched (as it would without bash).
const WRAPPER = `p=$1 id=$2; shift 2
{ exec 9<>"/dev/tcp/127.0.0.1/$p"; } 2>/dev/null && printf 'start %s\\n' "$id" >&9
"$@" 9>&-
rc=$?
printf 'end %s\\n' "$id" 2>/dev/null >&9
exit $rc`;

/**
 * Run inside as the command's user: stops every process marked with $1 (its environment holds
 * BELAY_COMMAND=$1) and every process whose parent was stopped, round after round until a round
 * finds no new one (stopped processes cannot fork), then kills them all.
 */
export const KILL_SCRIPT = `id=$1 me=$$ taken=' ' round=0
while [ $round -lt 200 ]; do
  round=$((round + 1)); found=''
  for f in $(grep -l -e "${COMMAND_VARIABLE}=$id" /proc/[0-9]*/environ 2>/dev/null); do
    p=\${f#/proc/}; p=\${p%/environ}
    case "$taken" in *" $p "*) ;; *) [ "$p" != "$me" ] && found="$found $p" ;; esac
  done
  children=$(grep -H '^PPid:' /proc/[0-9]*/status 2>/dev/null | while IFS=: read -r f _ pp; do
    p=\${f#/proc/}; p=\${p%/status}; pp=\${pp#"\${pp%%[0-9]*}"}
    case "$taken" in *" $pp "*) case "$taken" in *" $p "*) ;; *) echo "$p" ;; esac ;; esac
  done)
  for p in $children; do case "$found " in *" $p "*) ;; *) [ "$p" != "$me" ] && found="$found $p" ;; esac; done
  [ -z "$found" ] && break
  kill -STOP $found 2>/dev/null
  taken="$taken\${found# } "
done
[ "$taken" = ' ' ] || kill -KILL $taken 2>/dev/null
exit 0`;

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

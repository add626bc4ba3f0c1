// Commands on an executor that may still be starting (a phase's sandbox or container comes up
// while the harness already asks for its first command): what is asked of the command before the
// executor is there waits for it, and a phase whose executor could not start fails each command
// with that reason in one line.
import type { ChildEnd, RunningChild } from '../../../shared/process.ts';
import type { Executor, ExecutorCommand } from '../../../shared/executor/contract.ts';

/** Starts `command` on `executor` now, or once it is ready. */
export function spawnOn(executor: Executor | Promise<Executor>, command: ExecutorCommand): RunningChild {
  if (!(executor instanceof Promise)) return executor.spawn(command);
  let child: RunningChild | undefined;
  const pending: ((child: RunningChild) => void)[] = [];
  let resolveEnd!: (end: ChildEnd) => void;
  const ended = new Promise<ChildEnd>((resolve) => (resolveEnd = resolve));
  executor.then(
    (ready) => {
      child = ready.spawn(command);
      for (const action of pending.splice(0)) action(child);
      void child.ended.then(resolveEnd);
    },
    (error: unknown) => {
      pending.length = 0;
      resolveEnd({ exitCode: null, signal: null, spawnError: new Error(`${command.argv[0]}: not started: ${error instanceof Error ? error.message : String(error)}`) });
    },
  );
  const later = (action: (child: RunningChild) => void) => (child ? action(child) : void pending.push(action));
  return {
    get pid() {
      return child?.pid;
    },
    write: (text) => later((c) => c.write(text)),
    endInput: () => later((c) => c.endInput()),
    kill: () => later((c) => c.kill()),
    ended,
  };
}

// Live output of tasks that share one output (Test Explorer's run): whole lines, named by task.
import { neutraliseControls } from '../../../shared/terminalText.ts';

/**
 * A task's live output in whole lines, each after the task's name: tasks that run at the same
 * time write to the same Test Explorer run, and a line cut in two would mix with another task's.
 */
export class LineOutput {
  readonly #prefix: string | undefined;
  readonly #append: (text: string) => void;
  #partial = '';

  /** `taskName`: the prefix of each line when tasks run at the same time; without it, text goes as it comes. */
  constructor(taskName: string | undefined, append: (text: string) => void) {
    this.#prefix = taskName === undefined ? undefined : `\x1b[2m[${neutraliseControls(taskName)}]\x1b[0m `;
    this.#append = append;
  }

  write(text: string): void {
    if (this.#prefix === undefined) {
      this.#append(text);
      return;
    }
    const joined = this.#partial + text;
    const end = joined.lastIndexOf('\n');
    if (end < 0) {
      this.#partial = joined;
      return;
    }
    this.#partial = joined.slice(end + 1);
    this.#append(
      joined
        .slice(0, end + 1)
        .split(/(?<=\n)/)
        .map((line) => this.#prefix + line)
        .join(''),
    );
  }

  flush(): void {
    if (this.#partial === '' || this.#prefix === undefined) return;
    this.#append(`${this.#prefix}${this.#partial}\n`);
    this.#partial = '';
  }
}

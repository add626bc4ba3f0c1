// The Get Started walkthrough's way into the demo workspace (demo/ in the repository, which
// `npm start` opens): which folder is the demo, and what each step of the walkthrough opens there.
// Pure (no `vscode`): the table is the one place a new step's example is named.
import { existsSync } from 'node:fs';
import * as path from 'node:path';

/** The walkthrough's id in package.json (`contributes.walkthroughs`). */
export const WALKTHROUGH_ID = 'belay.gettingStarted';
/** Its title there, which its editor tab shows. */
export const WALKTHROUGH_TITLE = 'Get Started with Belay';

/** What each step of the walkthrough opens in the demo workspace. */
export const DEMO_STEPS = {
  /** The scripted cue agent, run in a terminal (where Belay puts its cueme on the PATH). */
  cues: { file: 'cues/scripted-agent.sh', shellLine: 'sh cues/scripted-agent.sh', runs: true },
  /** An LLM answer with command blocks, each with Apply and Preview above it. */
  blocks: { file: 'blocks/answers/example.agent', runs: false },
  /** A task run live in a terminal, by a scripted agent. */
  tasks: { file: 'tasks/hello-world/task.toml', task: 'hello-world', agent: 'Demo SDK 1.x agent', runs: true },
  /** A job (every demo task, three attempts each), then its Results. */
  jobs: { file: 'tasks/count-words/task.yaml', tasks: ['hello-world', 'count-words'], agent: 'Demo SDK 1.x agent', attempts: 3, concurrency: 2, runs: true },
} as const;

export type DemoStep = keyof typeof DEMO_STEPS;

/** The demo's own guide (a demo folder has it too). */
export const DEMO_README = 'README.md';

/** The step a command argument names, or undefined. */
export function demoStep(value: unknown): DemoStep | undefined {
  return typeof value === 'string' && Object.hasOwn(DEMO_STEPS, value) ? (value as DemoStep) : undefined;
}

/** True when `folder` holds every example the walkthrough opens: Belay's demo workspace. */
export function isDemoFolder(folder: string): boolean {
  return Object.values(DEMO_STEPS).every((step) => existsSync(path.join(folder, step.file))) && existsSync(path.join(folder, DEMO_README));
}

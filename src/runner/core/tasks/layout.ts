// The task layouts' file names, in one place: the loader, the editor's watchers, the views
// and Test Explorer all name files through here.
import * as path from 'node:path';

export type TaskLayout = 'current' | 'legacy' | 'repo';

/** Paths relative to the task folder (with `/`: they also appear in messages). */
export const LAYOUT_FILES = {
  /** Harbor / Terminal-Bench 2: task.toml, instruction.md, tests/test.sh, environment/, solution/. */
  current: {
    config: 'task.toml',
    instruction: 'instruction.md',
    tests: 'tests',
    testScript: 'tests/test.sh',
    solution: 'solution/solve.sh',
    environment: 'environment',
  },
  /** Terminal-Bench 1: task.yaml (which holds the instruction), run-tests.sh beside tests/, solution.sh. */
  legacy: {
    config: 'task.yaml',
    instruction: 'task.yaml',
    tests: 'tests',
    testScript: 'run-tests.sh',
    solution: 'solution.sh',
    /** The task folder itself seeds the run; these stay out of it. */
    notSeeded: ['task.yaml', 'solution.sh', 'solution.yaml', 'run-tests.sh', 'tests'],
  },
  /** Term Challenge repository tasks: workspace.yaml (repository, base commit, install), prompt.md, tests/*.sh. */
  repo: {
    config: 'workspace.yaml',
    instruction: 'prompt.md',
    tests: 'tests',
    /** Every tests/*.sh is a test; failures point at the folder. */
    testScript: 'tests',
    environment: 'environment',
  },
} as const;

/** Never copied into a run's working directory: the environment is not built from them. */
export const DOCKER_FILES = ['Dockerfile', 'docker-compose.yaml', 'docker-compose.yml', '.dockerignore'];

/** What makes a folder a task, for messages: "a folder with task.toml or task.yaml". */
export const TASK_FOLDER = `a folder with ${LAYOUT_FILES.current.config}, ${LAYOUT_FILES.legacy.config} or ${LAYOUT_FILES.repo.config}`;

/** The files whose appearance, change or removal changes the list of tasks. */
export const TASK_MARKER_FILES = [LAYOUT_FILES.current.config, LAYOUT_FILES.legacy.config, LAYOUT_FILES.repo.config, LAYOUT_FILES.current.instruction, LAYOUT_FILES.repo.instruction, LAYOUT_FILES.legacy.testScript];

interface Located {
  dir: string;
  layout: TaskLayout;
}

/** The file that holds the task's instruction (what opening a task shows). */
export function instructionFile(task: Located): string {
  return path.join(task.dir, LAYOUT_FILES[task.layout].instruction);
}

/** The task's test script in the task folder (where a failed test points). */
export function testScriptFile(task: Located): string {
  return path.join(task.dir, LAYOUT_FILES[task.layout].testScript);
}

/** The layout's configuration file name: task.toml, task.yaml or workspace.yaml. */
export function configFileName(layout: TaskLayout): string {
  return LAYOUT_FILES[layout].config;
}

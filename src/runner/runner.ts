// The runner's editor parts, built once by registerRunner and handed to its commands. Belay's
// integration tests reach the same parts as `api.test.runner` when the extension runs in test mode.
import type { BelayContext } from '../context.ts';
import type { RunnerService } from './service.ts';
import type { Terminals } from './terminal.ts';
import type { TaskTests } from './testing.ts';
import type { TrajectoryPanels } from './trajectoryPanel.ts';
import type { TasksTree } from './tree.ts';

export interface RunnerParts {
  readonly ctx: BelayContext;
  readonly service: RunnerService;
  /** How terminals are made: tests replace `terminals.create` to read what runs write. */
  readonly terminals: Terminals;
  readonly tree: TasksTree;
  readonly tests: TaskTests;
  readonly trajectories: TrajectoryPanels;
}

/** The runner's test seams (present only in ExtensionMode.Test). */
export type RunnerTestApi = Omit<RunnerParts, 'ctx'>;

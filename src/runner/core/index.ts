// The task runner's pure core: what the command line and the editor layer import.
export { localBackend, sandboxBackend, SandboxUnavailableError, type Backend, type BackendSession, type RunFolders } from './backend.ts';
export { FAILURE_CAUSES, type FailureCause, type Protocol, type RunEvent, type RunEventListener } from './events.ts';
export { runNanobot, TerminalConfigSchema, type NanobotEvent, type NanobotResult, type TerminalConfig } from './nanobot.ts';
export { DEFAULT_LIMITS, type RunLimits } from './protocol.ts';
export { readResult, runFiles, type RunResult, type TrajectoryEntry, type Verification } from './records.ts';
export { newRunId, runTask, type RunTaskOptions } from './run.ts';
export { discoverTasks, loadTask, TaskError, type Task } from './task.ts';

// The trajectory view's message protocol, shared by the extension host and the webview app.
// The app says `ready` first (src/webviews/shared/connect.ts); the host answers with the run. Everything an
// agent wrote is a plain string here and is shown with textContent only.
import * as z from 'zod';

/** What model calls cost, through Belay's gateway. */
export const llmUsageSchema = z.object({
  requests: z.number(),
  inputTokens: z.number(),
  outputTokens: z.number(),
  costUsd: z.number(),
});
export type LlmUsageView = z.infer<typeof llmUsageSchema>;

export const stepSchema = z.object({
  step: z.number(),
  agentText: z.string().nullable(),
  command: z.string().nullable(),
  cwd: z.string().nullable(),
  exitCode: z.number().nullable(),
  timedOut: z.boolean(),
  durationMs: z.number().nullable(),
  /** The step's output (cut when long), or what the agent saw when no output was kept. */
  output: z.string(),
  /** `output`: the step's own output; `screen`: no output was kept, this is what the agent saw. */
  outputKind: z.enum(['output', 'screen']),
  hasOutputFile: z.boolean(),
  /** The model calls the agent made for this step, when it used Belay's gateway. */
  llm: llmUsageSchema.nullable(),
  /** Who the step is (an ATIF trajectory's user and system steps are shown too); absent: the agent. */
  source: z.enum(['system', 'user', 'agent']).optional(),
  /** An ATIF subagent's steps: the subagent's trajectory ids from the top, outermost first ("search › fetch"). */
  subagent: z.string().optional(),
});
export type TrajectoryStep = z.infer<typeof stepSchema>;

export const runSummarySchema = z.object({
  runId: z.string(),
  task: z.string(),
  agent: z.string().nullable(),
  protocol: z.string(),
  backend: z.string(),
  startedAt: z.string(),
  durationSec: z.number(),
  passed: z.boolean(),
  /** null when the tests gave several metrics and none is the reward (see `rewardText`). */
  reward: z.number().nullable(),
  /** "reward 0.75", or the metrics one by one when there is no single reward. */
  rewardText: z.string(),
  failureCause: z.string().nullable(),
  /** The failure cause in words ("the tests failed"), null for a passed run. */
  causeWords: z.string().nullable(),
  error: z.string().nullable(),
  /** The tests that did not pass (ctrf.json), each with its message. */
  failedTests: z.array(z.object({ name: z.string(), status: z.string(), message: z.string().nullable() })),
  /** A protocol mismatch of a run the editor made: the protocol the agent seems to speak. */
  protocolFix: z.object({ agent: z.string(), protocol: z.string() }).nullable(),
  testOutput: z.string(),
  skippedEntries: z.number(),
  /** The run's model calls, when it used Belay's gateway. */
  llm: llmUsageSchema.nullable(),
  /** `atif`: an ATIF file Belay did not write (a Harbor trial): no logs, output files or Repeat, only its files. */
  kind: z.enum(['run', 'atif']).optional(),
});
export type RunSummary = z.infer<typeof runSummarySchema>;

/** One run of a comparison. */
export const compareSideSchema = z.object({ run: runSummarySchema, steps: z.array(stepSchema) });
export type CompareSide = z.infer<typeof compareSideSchema>;

/** The parts of two aligned steps that differ, marked on the page. */
export const COMPARED_PARTS = ['command', 'status', 'output', 'message'] as const;

/** Two aligned steps (by position): `difference` says in words how they differ, null when they match; `parts` which parts differ. */
export const compareRowSchema = z.object({ index: z.number(), difference: z.string().nullable(), parts: z.array(z.enum(COMPARED_PARTS)).default([]) });
export type CompareRow = z.infer<typeof compareRowSchema>;

export const toWebviewSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('run'), run: runSummarySchema, steps: z.array(stepSchema), focus: z.number().optional() }),
  z.object({
    type: z.literal('compare'),
    left: compareSideSchema,
    right: compareSideSchema,
    rows: z.array(compareRowSchema),
    /** Where the runs first went apart (a row index), null when they never did. */
    firstDivergence: z.object({ index: z.number(), words: z.string() }).nullable(),
    /** How many rows differ in each way, in words ("1 in the command, 2 in the output"); '' when none does. */
    countsWords: z.string().default(''),
  }),
  z.object({ type: z.literal('error'), message: z.string() }),
]);
export type ToWebview = z.infer<typeof toWebviewSchema>;

export const toHostSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready') }),
  /** `side`: which run of a comparison (absent: the one run shown). */
  z.object({ type: z.literal('openOutput'), step: z.number(), side: z.enum(['left', 'right']).optional() }),
  z.object({ type: z.literal('openFile'), file: z.enum(['result', 'trajectory', 'testOutput', 'agentLog']) }),
  z.object({ type: z.literal('repeat') }),
  /** Opens the agent's entry in the belay.agents setting (to fix its protocol). */
  z.object({ type: z.literal('openAgentSettings'), agent: z.string() }),
  /** Opens one run of a comparison on its own. */
  z.object({ type: z.literal('openRun'), side: z.enum(['left', 'right']) }),
]);
export type ToHost = z.infer<typeof toHostSchema>;

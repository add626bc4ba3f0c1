// "Belay: Regrade Job…" and the Results view's Regrade button: the job's trials graded again by
// their tasks' current verifiers on the final states their runs kept (core/regrade/), with the
// backend runs use now; no agent, no key, no gateway. The change is told per trial in the log
// and as Harbor's summary line in a notification; the Results view shows it per cell (its
// latest regrade, core/results/latestRegrade.ts), drawn again now.
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import type { RegradeReport } from './core/regrade/regrade.ts';
import type { Prompts } from './prompts.ts';
import type { ResultsPanel } from './resultsPanel.ts';
import type { RunnerService } from './service.ts';

interface RegradeParts {
  readonly ctx: BelayContext;
  readonly service: RunnerService;
  readonly prompts: Prompts;
  readonly results: ResultsPanel;
}

export async function regradeJobCommand(parts: RegradeParts, arg?: unknown): Promise<RegradeReport | undefined> {
  const { ctx, service } = parts;
  // The verifiers are the tasks' programs: they run only where the person trusts the workspace.
  if (!ctx.trust.require('runAgents')) return undefined;
  const jobDir = typeof arg === 'string' ? arg : parts.results.shown[0];
  if (!jobDir) throw new Error('no job to regrade: open one in the Results view first');
  const { regradeJob, regradeLine, regradeSummary } = await import('./core/regrade/regrade.ts');
  const backend = await service.backend();
  const name = jobDir.split(/[\\/]/).at(-1)!;
  const report = await parts.prompts.progress(`Belay: regrading ${name}`, (progress, signal) =>
    regradeJob({
      jobDir,
      backend,
      // A task whose verifier asks for the public network is regraded only when the person allows it.
      allowPublicNetwork: ctx.config.get('runner.allowPublicNetwork'),
      signal,
      onNotice: (message) => ctx.log.info(`regrade: ${message}`),
      onTrial: (trial) => {
        const line = regradeLine(trial);
        ctx.log.info(`regrade ${name}: ${line}`);
        progress(line);
      },
    }),
  );
  const summary = regradeSummary(report);
  ctx.log.info(`regrade ${name}: ${summary}`);
  parts.results.refresh();
  const skipped = report.trials.find((t) => !t.after);
  void vscode.window.showInformationMessage(`Belay: regrade of ${name}: ${summary}${skipped ? ` (${regradeLine(skipped)})` : ''}`);
  return report;
}

// `belay run --regrade DIR/<job-id>`: the job's trials graded again by their tasks' current
// verifiers on the final states their runs kept, without any agent, key or gateway.
import { errorMessage } from '../shared/errors.ts';
import { neutraliseControls } from '../shared/terminalText.ts';
import { BackendUnavailableError, type Backend } from '../runner/core/backends/backend.ts';
import { pickBackend, type BackendName } from '../runner/core/backends/choose.ts';
import { readJob } from '../runner/core/jobs/schema.ts';
import { regradeJob, regradeLine, regradeSummary } from '../runner/core/regrade/regrade.ts';
import { onSignals, type CliIO } from './io.ts';

export interface RegradeCliOptions {
  jobDir: string;
  /** The backend asked for; absent: the job's own. */
  backend?: BackendName;
  engine?: 'podman' | 'docker';
  json: boolean;
  /** --allow-public-network: a task whose verifier's network_mode is "public" is regraded (else it is not, in one line). */
  allowPublicNetwork: boolean;
}

export async function regradeCli(options: RegradeCliOptions, io: CliIO): Promise<number> {
  let job;
  try {
    job = await readJob(options.jobDir);
  } catch (error) {
    io.stderr.write(`belay run: --regrade: ${errorMessage(error)}\n`);
    return 1;
  }
  let backend: Backend;
  try {
    const name = options.backend ?? (job.settings.backend as BackendName);
    backend = await pickBackend(name, { container: options.engine !== undefined ? { engine: options.engine } : {} });
  } catch (error) {
    if (!(error instanceof BackendUnavailableError)) throw error;
    io.stderr.write(`belay run: ${error.message}\nGive --backend to regrade on another backend.\n`);
    return 1;
  }
  io.stderr.write(`belay run: regrading job ${job.job_id} with each task's current verifier (backend ${backend.label}; no agent, no key)\n`);
  const controller = new AbortController();
  const off = onSignals(['SIGINT'], () => controller.abort());
  try {
    const report = await regradeJob({
      jobDir: options.jobDir,
      backend,
      allowPublicNetwork: options.allowPublicNetwork,
      signal: controller.signal,
      onNotice: (message) => io.stderr.write(`belay run: ${neutraliseControls(message)}\n`),
      onTrial: (trial) => {
        if (!options.json) io.stdout.write(`${neutraliseControls(regradeLine(trial))}\n`);
      },
    });
    if (options.json) io.stdout.write(JSON.stringify(report, null, 2) + '\n');
    else io.stdout.write(`${regradeSummary(report)}\n`);
    return report.trials.some((t) => !t.after) ? 1 : 0;
  } finally {
    off();
  }
}

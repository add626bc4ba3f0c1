// A nanobot micro-agent's message through an isolating launcher once its environment is up (the
// bot's container or sandbox kept between messages, each message one command on its executor)
// against the same message run locally (a child process of Belay), in the same run. Figures are
// medians of whole messages (envelope in, answer out), measured in interleaved rounds so that a
// burst of load from other processes on the machine does not decide a ratio.
import * as path from 'node:path';
import { detectEngine } from '../src/runner/core/backends/engine.ts';
import { BASE_IMAGE } from '../src/runner/core/backends/image-base.ts';
import { microAgentLauncher } from '../src/runner/core/backends/nanobot-launch.ts';
import { runNanobot, TerminalConfigSchema, type NanobotLauncher } from '../src/runner/core/protocols/nanobot.ts';
import { percentile, type BenchFile, type Figure } from './lib.ts';

const MESSAGES = 100;
const ROUNDS = 5;
const PER_ROUND = MESSAGES / ROUNDS;

const config = TerminalConfigSchema.parse({ command: 'cat > /dev/null; echo ok', protocol: 'plain', timeout: 60 });

async function messages(launcher: NanobotLauncher | 'local', workspace: string, count: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    const result = await runNanobot({ config, launcher, input: { text: 'x', workspace } });
    times.push(performance.now() - t0);
    if (!result.ok || result.messages[0]?.text !== 'ok') throw new Error(`message failed: ${JSON.stringify(result)}`);
  }
  return times;
}

const bench: BenchFile = {
  title: 'nanobot micro-agents',
  async run(ctx) {
    const figures: Figure[] = [];
    const places: { name: string; launcher: NanobotLauncher & { dispose(): Promise<void> } }[] = [];
    for (const backend of ['sandbox', 'container'] as const) {
      try {
        if (backend === 'container' && !(await (await detectEngine()).imageExists(BASE_IMAGE))) throw new Error(`${BASE_IMAGE} is not built`);
        const launcher = await microAgentLauncher({ backend, agentFolders: [] });
        if (launcher !== 'local') places.push({ name: backend, launcher });
      } catch (error) {
        ctx.log(`${backend} skipped: ${(error as Error).message}`);
      }
    }
    try {
      const workspace = (name: string) => path.join(ctx.tmpDir, name);
      // The first message of each starts its environment: not counted.
      await messages('local', workspace('local'), 5);
      for (const place of places) await messages(place.launcher, workspace(place.name), 5);
      const local: number[] = [];
      const isolated = new Map<string, number[]>(places.map((place) => [place.name, []]));
      for (let round = 0; round < ROUNDS; round++) {
        local.push(...(await messages('local', workspace('local'), PER_ROUND)));
        for (const place of places) isolated.get(place.name)!.push(...(await messages(place.launcher, workspace(place.name), PER_ROUND)));
      }
      const baseline = percentile(local, 50);
      ctx.log(`local: median ${baseline.toFixed(2)} ms per message`);
      for (const [name, times] of isolated) {
        ctx.log(`${name}: median ${percentile(times, 50).toFixed(2)} ms per message`);
        figures.push({
          name: `micro-agent message after the first, median of ${times.length} (${name}, its environment kept)`,
          value: percentile(times, 50),
          baselineName: 'the same message run locally, same run',
          baseline,
          unit: 'ms',
        });
      }
    } finally {
      await Promise.all(places.map((place) => place.launcher.dispose()));
    }
    return figures;
  },
};

export default bench;

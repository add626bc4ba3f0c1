// Command blocks in the editor: what the language server computes for an answer (diagnostics,
// which plan every block against the workspace as `belay blocks apply` would, and CodeLenses)
// beside parsing the same text, in the same run: while typing, right after a file changed, and
// the first time.
import { mkdir, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { parseAnswer } from '../src/blocks/core/parser.ts';
import { analyze, PlanCache } from '../src/server/analysis.ts';
import { generateAnswer } from './blocks.bench.ts';
import { alternatingMedians, percentile, type BenchFile, type Figure } from './lib.ts';

const bench: BenchFile = {
  title: 'Command blocks in the editor',
  async run(ctx) {
    const workspace = path.join(ctx.tmpDir, 'workspace');
    await mkdir(path.join(workspace, 'src'), { recursive: true });
    await writeFile(path.join(workspace, 'README.md'), 'demo\n');
    const { text, blocks } = generateAnswer(2 * 1024 * 1024);
    const settings = { workspaceFolders: [workspace], sessionRoot: '.belay/agent' };
    const first = await analyze({ uri: 'untitled:bench', text, documentPath: undefined, settings });
    if (first.parsed.commands.length !== blocks) throw new Error(`expected ${blocks} blocks, got ${first.parsed.commands.length}`);
    ctx.log(`answer: ${(text.length / 1024 / 1024).toFixed(1)} MB, ${blocks} blocks, ${first.diagnostics.length} diagnostics, ${first.lenses.length} lenses`);
    let sink = 0;
    // As the server works while the user types: the answer changes (here one character of prose
    // each round), the files do not, so the plans are reused.
    const plans = new PlanCache();
    // Variants prepared outside the timing, as flat strings (as the server's documents are).
    const variants = Array.from({ length: 20 }, (_, i) => Buffer.from(`${text}\nprose ${i}`, 'utf8').toString('utf8'));
    let round = 0;
    const edited = () => variants[round++ % variants.length]!;
    await analyze({ uri: 'untitled:bench', text: edited(), documentPath: undefined, settings, plans });
    const [parse, warm] = await alternatingMedians(
      () => (sink += parseAnswer(edited()).commands.length),
      async () => {
        const result = await analyze({ uri: 'untitled:bench', text: edited(), documentPath: undefined, settings, plans });
        sink += result.diagnostics.length + result.lenses.length;
      },
      7,
    );
    // Right after a file changed (as the server hears of it): the blocks whose paths the change
    // touches are planned again against the file system, the others' plans are kept.
    const afterChange = new PlanCache();
    await analyze({ uri: 'untitled:bench', text, documentPath: undefined, settings, plans: afterChange });
    // The file changes between the timings; what is timed is from the server hearing of it to the
    // diagnostics and lenses, beside parsing the same text, in turn.
    const parseTimes: number[] = [];
    const changedTimes: number[] = [];
    for (let round = -1; round < 9; round++) {
      let t0 = performance.now();
      sink += parseAnswer(text).commands.length;
      const parsed = performance.now() - t0;
      // A file the answer creates and then edits, changed on disk.
      const file = path.join(workspace, 'src', `module${((round + 1) % (blocks / 4)) * 4}.ts`);
      await writeFile(file, `// changed ${round}\n`);
      t0 = performance.now();
      afterChange.invalidate([file]);
      const result = await analyze({ uri: 'untitled:bench', text, documentPath: undefined, settings, plans: afterChange });
      const analysed = performance.now() - t0;
      sink += result.diagnostics.length + result.lenses.length;
      if (round < 0) continue;
      parseTimes.push(parsed);
      changedTimes.push(analysed);
    }
    const [parseChanged, changed] = [percentile(parseTimes, 50), percentile(changedTimes, 50)];
    // The first analysis (or after a setting changed): every block planned against the file system.
    const [parseCold, cold] = await alternatingMedians(
      () => (sink += parseAnswer(text).commands.length),
      async () => {
        const result = await analyze({ uri: 'untitled:bench', text, documentPath: undefined, settings });
        sink += result.diagnostics.length + result.lenses.length;
      },
      5,
    );
    if (sink < 0) ctx.log(String(sink));
    const figures: Figure[] = [
      {
        name: `diagnostics + CodeLenses of a 2 MB answer while typing (${blocks} blocks, plans reused)`,
        value: warm,
        baselineName: 'parse the same text',
        baseline: parse,
        unit: 'ms',
        goal: 1.5,
      },
      {
        name: `diagnostics + CodeLenses of a 2 MB answer right after a file it touches changed (${blocks} blocks; those on that file planned again)`,
        value: changed,
        baselineName: 'parse the same text',
        baseline: parseChanged,
        unit: 'ms',
        goal: 3,
      },
      {
        name: `diagnostics + CodeLenses of a 2 MB answer analysed for the first time (${blocks} blocks, each planned against the workspace)`,
        value: cold,
        baselineName: 'parse the same text',
        baseline: parseCold,
        unit: 'ms',
      },
    ];
    return figures;
  },
};

export default bench;

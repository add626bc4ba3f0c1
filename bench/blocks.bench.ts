// Command blocks: parsing a large answer, parsing hostile answers of the same size, and applying
// many CREATE_FILE blocks, each beside the bare work (or the normal answer) measured in the same run.
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { executeAnswer } from '../src/blocks/core/executor.ts';
import { parseAnswer } from '../src/blocks/core/parser.ts';
import { openWorkspace } from '../src/blocks/core/sandbox.ts';
import { pathologicalAnswers, repeatTo } from '../test/support/blocks/hostileAnswers.ts';
import { alternatingMedians, type BenchFile, type Figure } from './lib.ts';

/** An answer of about `bytes` characters: prose, code files, edits, commands, as LLMs write them. */
export function generateAnswer(bytes: number): { text: string; blocks: number } {
  const parts: string[] = [];
  let size = 0;
  let blocks = 0;
  for (let i = 0; size < bytes; i++) {
    let part: string;
    switch (i % 4) {
      case 0: {
        const body = Array.from({ length: 40 }, (_, j) => `    const value${j} = compute(${i}, ${j}); // keep indentation [${j}]`).join('\n');
        part = `Now the module ${i}:\n\n[CREATE_FILE path="src/module${i}.ts"]\nexport function run${i}() {\n${body}\n}\n\n[/CREATE_FILE]\n`;
        break;
      }
      case 1:
        part = `[EDIT_FILE path="src/module${i - 1}.ts" start_line="3" end_line="5"]\n    return value1 + value2;\n[/EDIT_FILE]\n`;
        break;
      case 2:
        part = `Let me check it builds.\n[RUN_COMMAND]\nnpx tsc --noEmit src/module${i - 2}.ts\n[/RUN_COMMAND]\n[READ_FILE path="src/module${i - 2}.ts"]\n`;
        blocks++;
        break;
      default:
        part = `Some explanation of step ${i}, with [brackets] and \`[code]\` in prose.\n- a list item\n\n`;
        blocks--;
    }
    blocks++;
    parts.push(part);
    size += part.length;
  }
  return { text: parts.join(''), blocks };
}

/** The same text as one flat string (as a document's or a file's text is), not a rope of concatenations. */
function flat(text: string): string {
  return Buffer.from(text, 'utf8').toString('utf8');
}

/** The baseline: split the text into lines and trim each, the least any line-based parser does. */
function splitAndTrim(text: string): number {
  let nonEmpty = 0;
  for (const line of text.split('\n')) if (line.trim() !== '') nonEmpty++;
  return nonEmpty;
}

const bench: BenchFile = {
  title: 'Command blocks',
  async run(ctx) {
    const figures: Figure[] = [];

    const { text, blocks } = generateAnswer(20 * 1024 * 1024);
    const parsed = parseAnswer(text);
    if (parsed.errors.length > 0 || parsed.commands.length !== blocks) {
      throw new Error(`the generated answer parsed to ${parsed.commands.length} commands (expected ${blocks}) and ${parsed.errors.length} errors`);
    }
    ctx.log(`answer: ${(text.length / 1024 / 1024).toFixed(1)} MB, ${blocks} blocks`);
    let sink = 0;
    const [baseline, parse] = await alternatingMedians(() => (sink += splitAndTrim(text)), () => (sink += parseAnswer(text).commands.length), 9);
    figures.push({
      name: `parse a ${Math.round(text.length / 1024 / 1024)} MB answer (${blocks} blocks)`,
      value: parse,
      baselineName: 'split into lines and trim each, same text',
      baseline,
      unit: 'ms',
      goal: 3,
    });

    // Hostile answers at 2 MB against a normal 2 MB answer: the worst of them is the figure, each
    // one is logged. Every one ends with a well-formed block that must still be found.
    const size = 2 * 1024 * 1024;
    const normal = generateAnswer(size).text;
    // Flat strings, as answers arrive (read from a file, or an editor's document) and as the normal
    // answer is (joined): built by repeat and concatenation, they would be ropes, each character
    // read through one more indirection, which the normal answer does not pay.
    const hostile: Record<string, string> = Object.fromEntries(
      Object.entries({ ...pathologicalAnswers(size), 'the normal answer with lone CRs': normal.replace(/\n/g, '\r') }).map(([name, answer]) => [name, flat(answer)]),
    );
    let worst: { name: string; value: number; baseline: number } | undefined;
    for (const [name, answer] of Object.entries(hostile)) {
      const [baseline, value] = await alternatingMedians(() => (sink += parseAnswer(normal).commands.length), () => (sink += parseAnswer(answer).commands.length), 7);
      ctx.log(`${name}: ${value.toFixed(1)} ms vs ${baseline.toFixed(1)} ms = ${(value / baseline).toFixed(2)}x`);
      if (!worst || value / baseline > worst.value / worst.baseline) worst = { name, value, baseline };
    }
    figures.push({
      name: `parse the worst of ${Object.keys(hostile).length} hostile 2 MB answers (${worst!.name})`,
      value: worst!.value,
      baselineName: 'a normal 2 MB answer',
      baseline: worst!.baseline,
      unit: 'ms',
      goal: 3,
    });
    // Not hostile, only dense: ~100k well-formed blocks in 2 MB, each a command with its ranges.
    const dense = repeatTo('[READ_FILE path="a.txt"]\n', size);
    const [denseBaseline, denseValue] = await alternatingMedians(() => (sink += parseAnswer(normal).commands.length), () => (sink += parseAnswer(dense).commands.length), 7);
    figures.push({
      name: `parse 2 MB of one-line blocks (${parseAnswer(dense).commands.length} commands)`,
      value: denseValue,
      baselineName: `a normal 2 MB answer (${parseAnswer(normal).commands.length} commands)`,
      baseline: denseBaseline,
      unit: 'ms',
    });

    const files = 1000;
    const answer = Array.from({ length: files }, (_, i) => `[CREATE_FILE path="d${i % 10}/file${i}.txt"]\n${`line ${i}\n`.repeat(20)}[/CREATE_FILE]`).join('\n');
    const contents = parseAnswer(answer).commands.map((c) => ({ path: 'path' in c ? c.path : '', body: 'body' in c ? c.body.text : '' }));
    let round = 0;
    const fresh = async () => mkdtemp(path.join(ctx.tmpDir, `r${round++}-`));
    const [direct, applied] = await alternatingMedians(
      async () => {
        const dir = await fresh();
        for (let d = 0; d < 10; d++) await mkdir(path.join(dir, `d${d}`));
        for (const file of contents) await writeFile(path.join(dir, file.path), file.body);
      },
      async () => {
        const workspace = await openWorkspace(await fresh());
        const report = await executeAnswer(workspace, answer);
        if (!report.success) throw new Error(report.results.find((r) => !r.success)!.summary);
      },
      5,
    );
    figures.push({
      name: `apply ${files} CREATE_FILE blocks (sandbox, atomic writes)`,
      value: applied,
      baselineName: 'fs.writeFile of the same files',
      baseline: direct,
      unit: 'ms',
      goal: 2,
    });
    if (sink < 0) ctx.log(String(sink));
    return figures;
  },
};

export default bench;

// Answers a hostile or broken LLM could write to make the parser slow or lose blocks: the
// hostile-answer tests parse them, and `npm run bench` times them at 2 MB against a normal answer
// of the same size. Not a test file itself.

/** `unit` repeated as many whole times as fit in `size` characters (at least once). */
export function repeatTo(unit: string, size: number): string {
  return unit.repeat(Math.max(1, Math.floor(size / unit.length)));
}

/** A well-formed block after the hostile part: it must still be found. */
export const SURVIVOR = '\n[CREATE_FILE path="survivor.txt"]\nstill here\n[/CREATE_FILE]\n';

/**
 * The pathological answers, each about `size` characters and ending with SURVIVOR: lookalike tags
 * (once 23 s for 2 MB), lone CRs (quadratic), a tag with hundreds of thousands of attributes (at
 * 150k once a stack overflow that dropped every later block; its body here holds a RUN_COMMAND
 * that must not run), and floods of errors of every kind. 'unclosed blocks' is the one whose
 * SURVIVOR is rightly swallowed (an unclosed block takes everything after it).
 */
export function pathologicalAnswers(size: number): Record<string, string> {
  const fill = (unit: string) => repeatTo(unit, size - SURVIVOR.length) + SURVIVOR;
  const tag = (inner: string) => `[CREATE_FILE path="a.txt" ${repeatTo(inner, size - SURVIVOR.length - 60)}]\n[RUN_COMMAND]\nrm -rf .\n[/RUN_COMMAND]\n[/CREATE_FILE]${SURVIVOR}`;
  return {
    'lookalike blocks [DON]…[/DON]': fill('[DON]\nx\n[/DON]\n'),
    'lookalike one-liners [DON]x[/DON]': fill('[DON]x[/DON]\n'),
    'misspelt tags [CREATE_FILX]': fill('[CREATE_FILX]\n'),
    'many lookalike names, each closed': fill([...'ABCDFGHIJKLMNOPQRSTUVWXYZ'].map((c) => `[DON${c}]\n[RUN_COMMAND]\nx\n[/RUN_COMMAND]\n[/DON${c}]\n`).join('')),
    'many lookalike names, never closed': fill([...'ABCDFGHIJKLMNOPQRSTUVWXYZ'].map((c) => `[DON${c}]\n[/DONE${c}]\n`).join('')),
    'lone CRs': fill('some text\r'),
    'lone CRs with brackets': fill('[a\r'),
    'blocks separated by lone CRs': fill(`[CREATE_FILE path="a.py"]\r${'    x = compute(1, 2)  # a line of code\r'.repeat(30)}[/CREATE_FILE]\r`),
    'a tag with ~350k attributes': tag('a="1" '),
    'a tag with ~500k stray words': tag('x '),
    'a tag of unclosed quotes': tag('a="'),
    'stray closing tags': fill('[/DONE]\n'),
    'tags missing their path': fill('[DELETE_FILE]\n'),
    'unclosed blocks': fill('[RUN_COMMAND] x\n'),
    'blank lines': fill(' \t \n'),
  };
}

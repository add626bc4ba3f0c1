// The schema of a Replay (plan.ts): what an applied block left for the blocks after it. Checked
// where it arrives: in the ledger file, and in the language server's notification. Marked pure so
// that a bundle which only sends it (the language client) leaves zod out.
import * as z from 'zod';
import type { Replay } from './plan.ts';

const appliedEditSchema = /* @__PURE__ */ z.object({ start: /* @__PURE__ */ z.number().int(), end: /* @__PURE__ */ z.number().int(), delta: /* @__PURE__ */ z.number().int() });

export const replaySchema = /* @__PURE__ */ z.discriminatedUnion('kind', [
  /* @__PURE__ */ z.object({ kind: /* @__PURE__ */ z.literal('write'), real: /* @__PURE__ */ z.string(), lineCount: /* @__PURE__ */ z.number().int().min(0) }),
  /* @__PURE__ */ z.object({
    kind: /* @__PURE__ */ z.literal('edit'),
    real: /* @__PURE__ */ z.string(),
    originalLineCount: /* @__PURE__ */ z.number().int().min(0),
    applied: appliedEditSchema,
    relocated: /* @__PURE__ */ z.boolean().optional(),
  }),
  /* @__PURE__ */ z.object({ kind: /* @__PURE__ */ z.literal('delete'), real: /* @__PURE__ */ z.string() }),
  /* @__PURE__ */ z.object({ kind: /* @__PURE__ */ z.literal('read'), relative: /* @__PURE__ */ z.string() }),
  /* @__PURE__ */ z.object({ kind: /* @__PURE__ */ z.literal('run') }),
  /* @__PURE__ */ z.object({ kind: /* @__PURE__ */ z.literal('done') }),
]) satisfies z.ZodType<Replay>;

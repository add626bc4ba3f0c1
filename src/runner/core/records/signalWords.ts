// The reward-hacking signals' kinds and their words (the shared design's record field), apart from
// signals.ts so that the run terminal's formatting says them without loading zod at activation.
export const SIGNAL_KINDS = ['read_tests', 'read_solution', 'wrote_tests', 'changed_verifier_input', 'network_denied'] as const;
export type SignalKind = (typeof SIGNAL_KINDS)[number];

/** The kinds in words, for a badge's tooltip, the run terminal and `belay run`'s summary. */
export const SIGNAL_WORDS: Record<SignalKind, string> = {
  read_tests: 'read the tests',
  read_solution: 'read the solution',
  wrote_tests: 'wrote to the tests',
  changed_verifier_input: 'changed a file the tests read',
  network_denied: 'reached for a host outside the allowlist',
};

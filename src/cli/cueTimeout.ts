import { UsageError } from '../shared/args.ts';
import { errorMessage } from '../shared/errors.ts';
import { cueTimeoutMs } from '../cues/core/expiry.ts';

/** How long a cue waits (the one rule in cues/core/expiry.ts); a bad CUEME_TIMEOUT_SECONDS is a usage error. */
export function cueTimeoutForCommandLine(env: NodeJS.ProcessEnv): number {
  try {
    return cueTimeoutMs(env);
  } catch (error) {
    throw new UsageError(errorMessage(error));
  }
}

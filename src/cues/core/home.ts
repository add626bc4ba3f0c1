import { MailboxError } from './errors.ts';
import { defaultMailboxHint, pathsOf, userHomeOf } from './platform.ts';

export interface MailboxPaths {
  /** The mailbox folder: CUE_HOME, else ~/.cue. */
  home: string;
  /** `<home>/cue.db` */
  dbPath: string;
  /** `<home>/files`: attachments, named by their SHA-256. */
  filesDir: string;
  /** The base name of the database; its -wal, -shm and -journal files start with it. */
  dbFileName: string;
}

export const DB_FILE_NAME = 'cue.db';

/**
 * Where the mailbox is. The public tools always use `~/.cue` (the user's home as platform.ts finds
 * it: USERPROFILE on Windows, HOME elsewhere); Belay also reads `CUE_HOME` (the folder itself, not
 * its parent) so tests and people who want a separate mailbox can move it. Without CUE_HOME the
 * home must be known: guessing another one would give a mailbox no other tool reads.
 */
export function mailboxPaths(options: { home?: string; env?: NodeJS.ProcessEnv; platform?: NodeJS.Platform } = {}): MailboxPaths {
  const env = options.env ?? process.env;
  const platform = options.platform ?? process.platform;
  const paths = pathsOf(platform);
  let home = options.home ?? (env.CUE_HOME?.trim() || undefined);
  if (home === undefined) {
    const user = userHomeOf(env, platform);
    if (user.home === undefined) {
      const also = user.missing === 'HOME' ? ' (USERPROFILE on Windows)' : '';
      throw new MailboxError(
        'no-home',
        `cannot find the cue mailbox: ${user.missing} is not set${also}. Set ${user.missing}, or set CUE_HOME to the folder that holds cue.db (normally ${defaultMailboxHint(platform)})`,
      );
    }
    home = paths.join(user.home, '.cue');
  }
  home = paths.resolve(home);
  return { home, dbPath: paths.join(home, DB_FILE_NAME), filesDir: paths.join(home, 'files'), dbFileName: DB_FILE_NAME };
}

/** Expands a leading `~` of the `belay.cues.home` setting; empty stays empty (CUE_HOME or ~/.cue, as above). */
export function expandHomeSetting(setting: string, userHome: string): string | undefined {
  const value = setting.trim();
  if (!value) return undefined;
  return value.replace(/^~(?=$|[/\\])/, userHome);
}

/** Where the editor's mailbox is for the `belay.cues.home` setting: that folder, or else as for `cueme`. */
export function mailboxPathsForSetting(setting: string, userHome: string, env: NodeJS.ProcessEnv = process.env): MailboxPaths {
  const home = expandHomeSetting(setting, userHome);
  return mailboxPaths(home === undefined ? { env } : { home, env });
}

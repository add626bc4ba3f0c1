// `.gitignore` rules, enough for listing a workspace as Git would show it: comments, negation,
// anchoring, `dir/` for folders only, `*`, `?`, `[…]` and `**`. Each `.gitignore` applies to
// the folder it sits in and below; later rules win over earlier ones.

export interface IgnoreRule {
  /** The folder of the `.gitignore`, workspace-relative, '' for the root. */
  base: string;
  negate: boolean;
  folderOnly: boolean;
  regex: RegExp;
}

/** Parses the text of one `.gitignore` found in folder `base`. */
export function parseGitignore(text: string, base = ''): IgnoreRule[] {
  const rules: IgnoreRule[] = [];
  for (let line of text.split(/\r?\n/)) {
    if (line === '' || line.startsWith('#')) continue;
    line = trimUnescapedTrailingSpaces(line);
    if (line === '') continue;
    let negate = false;
    if (line.startsWith('!')) {
      negate = true;
      line = line.slice(1);
    } else if (line.startsWith('\\!') || line.startsWith('\\#')) {
      line = line.slice(1);
    }
    let folderOnly = false;
    if (line.endsWith('/') && !line.endsWith('\\/')) {
      folderOnly = true;
      line = line.slice(0, -1);
    }
    if (line === '') continue;
    const anchored = line.includes('/');
    if (line.startsWith('/')) line = line.slice(1);
    const body = globToRegex(line);
    const regex = new RegExp(anchored ? `^${body}$` : `^(?:.*/)?${body}$`);
    rules.push({ base, negate, folderOnly, regex });
  }
  return rules;
}

function trimUnescapedTrailingSpaces(line: string): string {
  let end = line.length;
  while (end > 0 && line[end - 1] === ' ' && line[end - 2] !== '\\') end--;
  return line.slice(0, end);
}

function globToRegex(glob: string): string {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') {
      if (glob[i + 1] === '*') {
        const atStart = i === 0 || glob[i - 1] === '/';
        const atEnd = i + 2 === glob.length;
        if (atStart && glob[i + 2] === '/') {
          out += '(?:.*/)?';
          i += 2;
          continue;
        }
        if (atStart && atEnd) {
          out += '.*';
          i += 1;
          continue;
        }
        i += 1;
      }
      out += '[^/]*';
    } else if (c === '?') {
      out += '[^/]';
    } else if (c === '[') {
      const close = glob.indexOf(']', i + 2);
      if (close === -1) {
        out += '\\[';
        continue;
      }
      let set = glob.slice(i + 1, close);
      if (set.startsWith('!')) set = `^${set.slice(1)}`;
      out += `[${set.replace(/\\/g, '\\\\')}]`;
      i = close;
    } else if (c === '\\' && i + 1 < glob.length) {
      out += escapeRegex(glob[++i]!);
    } else {
      out += escapeRegex(c);
    }
  }
  return out;
}

function escapeRegex(c: string): string {
  return /[.*+?^${}()|[\]\\/]/.test(c) ? `\\${c}` : c;
}

/** Whether `relative` (workspace-relative, `/`-separated) is ignored by the rules in force. */
export function isIgnored(rules: readonly IgnoreRule[], relative: string, isFolder: boolean): boolean {
  let ignored = false;
  for (const rule of rules) {
    if (rule.folderOnly && !isFolder) continue;
    let path = relative;
    if (rule.base !== '') {
      if (!relative.startsWith(`${rule.base}/`)) continue;
      path = relative.slice(rule.base.length + 1);
    }
    if (rule.regex.test(path)) ignored = !rule.negate;
  }
  return ignored;
}

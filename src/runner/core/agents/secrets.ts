// Secrets in agent settings: a value (an env value, a provider key) may say `${secret:NAME}`,
// filled in from the editor's SecretStorage at the moment a run starts; settings never hold one.
// The reference's syntax and the rule for names live here only.

const NAME = '[A-Za-z0-9_.-]+';
const REFERENCE = new RegExp(`\\$\\{secret:(${NAME})\\}`, 'g');
const WHOLE_NAME = new RegExp(`^${NAME}$`);

/** What a secret's name may hold, in words (for prompts and errors). */
export const SECRET_NAME_RULE = 'letters, digits, _ . -';

export function isSecretName(name: string): boolean {
  return WHOLE_NAME.test(name);
}

/** The text a setting holds to refer to the secret `name`. */
export function secretReference(name: string): string {
  return `\${secret:${name}}`;
}

/** The names of the secrets these texts refer to, each once. */
export function secretNames(values: Iterable<string>): string[] {
  const names = new Set<string>();
  for (const value of values) for (const match of value.matchAll(REFERENCE)) names.add(match[1]!);
  return [...names];
}

export class MissingSecretError extends Error {
  override name = 'MissingSecretError';
  readonly secret: string;
  constructor(secret: string, owner: string) {
    super(`${owner} needs the secret '${secret}', which is not set. Run "Belay: Set Agent Secret…" to store it.`);
    this.secret = secret;
  }
}

/** Replaces every `${secret:NAME}` with its value; a missing secret is an error naming it. */
export function fillSecrets(value: string, secrets: ReadonlyMap<string, string>, owner: string): string {
  return value.replace(REFERENCE, (_, name: string) => {
    const secret = secrets.get(name);
    if (secret === undefined) throw new MissingSecretError(name, owner);
    return secret;
  });
}

export function fillEnv(env: Record<string, string>, secrets: ReadonlyMap<string, string>, owner: string): Record<string, string> {
  return Object.fromEntries(Object.entries(env).map(([key, value]) => [key, fillSecrets(value, secrets, owner)]));
}

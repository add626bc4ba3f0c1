// A task's network, per phase (Harbor 1.4's task.toml): `[environment] network_mode` is the
// baseline, `[agent]` and `[verifier]` override it for their phase, and `allowed_hosts` names what
// an `allowlist` phase may reach. The older `[environment] allow_internet = true` reads as `public`.
// Belay's own semantics of an allowlist entry (documented in the README):
//   `example.com`        that name only, ports 80 and 443
//   `*.example.com`      any name below example.com (not example.com itself), ports 80 and 443
//   `example.com:8080`   that name on that port only (also `*.example.com:8080`)
//   `203.0.113.7`, `[2001:db8::1]:8443`   an address; the only way to let a private one through
// A name is never followed to a loopback, link-local, private or otherwise internal address: only
// an entry naming that address itself lets it through.
import { isIP } from 'node:net';
import * as z from 'zod';

export const NETWORK_MODES = ['no-network', 'allowlist', 'public'] as const;
export type NetworkMode = (typeof NETWORK_MODES)[number];

export const NetworkModeSchema = z.enum(NETWORK_MODES, { message: `must be one of ${NETWORK_MODES.map((mode) => `"${mode}"`).join(', ')}` });

/** The longest list of hosts a phase may name (each entry is checked on every attempt). */
export const MAX_ALLOWED_HOSTS = 256;

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** One allowlist entry, as the proxy matches it. */
export interface HostRule {
  /** An exact name or address (lower case, IPv6 without brackets), or the domain a `*.` entry covers. */
  host: string;
  /** True for `*.domain`: names below `host`, never `host` itself. */
  wildcard: boolean;
  /** The one port allowed; undefined: 80 and 443. */
  port: number | undefined;
  /** The host is an address literal (IPv4 or IPv6). */
  address: boolean;
}

/** Reads one `allowed_hosts` entry; throws a short reason when it is not one. */
export function parseHostRule(entry: string): HostRule {
  const text = entry.trim().toLowerCase();
  if (text === '' || text.length > 300) throw new Error('an entry must be 1 to 300 characters');
  if (/[\s/@?#]/.test(text) || text.includes('://')) throw new Error(`'${entry}' is not a host: give a name or an address, optionally with :port (no scheme, path or user)`);
  let host = text;
  let port: number | undefined;
  const bracketed = /^\[([0-9a-f:.]+)\](?::(\d+))?$/.exec(text);
  if (bracketed) {
    host = bracketed[1]!;
    if (bracketed[2] !== undefined) port = Number(bracketed[2]);
    if (isIP(host) !== 6) throw new Error(`'${entry}' is not an IPv6 address`);
  } else if (isIP(text) === 6) {
    host = text;
  } else {
    const colon = text.lastIndexOf(':');
    if (colon >= 0) {
      host = text.slice(0, colon);
      const portText = text.slice(colon + 1);
      if (!/^\d{1,5}$/.test(portText)) throw new Error(`'${entry}': the port must be a number`);
      port = Number(portText);
    }
  }
  if (port !== undefined && (port < 1 || port > 65535)) throw new Error(`'${entry}': the port must be 1 to 65535`);
  if (isIP(host) !== 0) return { host, wildcard: false, port, address: true };
  const wildcard = host.startsWith('*.');
  const name = wildcard ? host.slice(2) : host.replace(/\.$/, '');
  const labels = name.split('.');
  if (name.includes('*')) throw new Error(`'${entry}': '*' may only lead, as in *.example.com`);
  if (name.length > 253 || !labels.every((label) => LABEL.test(label))) throw new Error(`'${entry}' is not a host name`);
  if (wildcard && labels.length < 2) throw new Error(`'${entry}': a wildcard must cover a domain with a dot (*.example.com), not a whole top-level domain`);
  return { host: name, wildcard, port, address: false };
}

export const AllowedHostsSchema = z
  .array(z.string())
  .max(MAX_ALLOWED_HOSTS, { message: `at most ${MAX_ALLOWED_HOSTS} hosts` })
  .superRefine((entries, ctx) => {
    entries.forEach((entry, index) => {
      try {
        parseHostRule(entry);
      } catch (error) {
        ctx.addIssue({ code: 'custom', path: [index], message: (error as Error).message });
      }
    });
  });

/** The fields a phase's table of task.toml may carry ([environment], [agent], [verifier]). */
export const PhaseNetworkFields = {
  network_mode: NetworkModeSchema.optional(),
  allowed_hosts: AllowedHostsSchema.optional(),
};

interface PhaseFields {
  network_mode?: NetworkMode | undefined;
  allowed_hosts?: string[] | undefined;
}

const PhaseTableSchema = z.looseObject(PhaseNetworkFields);

/**
 * `[verifier.environment]`'s network fields (Harbor 1.4: the verifier's own environment has its own
 * baseline): checked where task.toml is read, each bad value an issue naming its field.
 */
export function checkVerifierEnvironmentNetwork(config: { verifier?: { environment?: unknown } | undefined }, ctx: z.RefinementCtx, at: readonly (string | number)[] = ['verifier', 'environment']): void {
  const table = config.verifier?.environment;
  if (table === undefined) return;
  const checked = PhaseTableSchema.safeParse(table);
  if (checked.success) return;
  for (const issue of checked.error.issues) ctx.addIssue({ code: 'custom', path: [...at, ...issue.path.map((part) => (typeof part === 'symbol' ? String(part) : part))], message: issue.message });
}

/** A step's verifier network as `[[steps]]` writes it: `verifier.network_mode`, `verifier.allowed_hosts`, and its `verifier.environment`'s. */
export interface StepNetworkFields extends PhaseFields {
  environment?: unknown;
}

/**
 * A step's verifier policy, resolved before the task's (Harbor's order): the step's
 * `verifier.network_mode` over its `verifier.environment`'s, over the task's verifier policy;
 * undefined when the step says nothing of the network (the task's then).
 */
export function stepVerifierNetwork(step: StepNetworkFields | undefined, task: PhasePolicy): PhasePolicy | undefined {
  const table = step?.environment === undefined ? undefined : PhaseTableSchema.safeParse(step.environment).data;
  if (step?.network_mode === undefined && step?.allowed_hosts === undefined && table?.network_mode === undefined && table?.allowed_hosts === undefined) return undefined;
  const base: PhasePolicy = table?.network_mode ? { mode: table.network_mode, allowedHosts: table.allowed_hosts ?? [] } : { ...task, allowedHosts: table?.allowed_hosts ?? task.allowedHosts };
  const mode = step?.network_mode ?? base.mode;
  const allowedHosts = mode === 'allowlist' ? (step?.allowed_hosts ?? base.allowedHosts) : [];
  return { mode, allowedHosts, ...(step?.network_mode === undefined && base.legacy ? { legacy: true } : {}) };
}

/** One phase's network, as the run applies it. */
export interface PhasePolicy {
  mode: NetworkMode;
  /** The allowlist's entries as written (empty for the other modes). */
  allowedHosts: string[];
  /** True when `public` came from the older `allow_internet = true` rather than `network_mode`. */
  legacy?: boolean;
}

export interface TaskNetwork {
  agent: PhasePolicy;
  verifier: PhasePolicy;
}

export const NO_NETWORK: TaskNetwork = { agent: { mode: 'no-network', allowedHosts: [] }, verifier: { mode: 'no-network', allowedHosts: [] } };

/**
 * Each phase's policy: its own table's `network_mode` over the baseline's; an allowlist's hosts
 * are the phase's own `allowed_hosts`, else the baseline's. The verifier's baseline is its own
 * environment's (`[verifier.environment]`'s `network_mode`, `allowed_hosts`) where that table says,
 * else `[environment]`'s. Nothing said: no network (Belay's default).
 */
export function taskNetwork(config: {
  environment?: (PhaseFields & { allow_internet?: boolean | undefined }) | undefined;
  agent?: PhaseFields | undefined;
  verifier?: (PhaseFields & { environment?: unknown }) | undefined;
}): TaskNetwork {
  const environment = config.environment;
  const baseline: PhasePolicy = environment?.network_mode
    ? { mode: environment.network_mode, allowedHosts: environment.allowed_hosts ?? [] }
    : environment?.allow_internet === true
      ? { mode: 'public', allowedHosts: [], legacy: true }
      : { mode: 'no-network', allowedHosts: environment?.allowed_hosts ?? [] };
  const phase = (own: PhaseFields | undefined, base: PhasePolicy): PhasePolicy => {
    const mode = own?.network_mode ?? base.mode;
    const allowedHosts = mode === 'allowlist' ? (own?.allowed_hosts ?? base.allowedHosts) : [];
    return { mode, allowedHosts, ...(own?.network_mode === undefined && base.legacy ? { legacy: true } : {}) };
  };
  // Checked when task.toml was read (checkVerifierEnvironmentNetwork); what is not a table of them counts for nothing.
  const table = config.verifier?.environment === undefined ? undefined : PhaseTableSchema.safeParse(config.verifier.environment).data;
  const verifierBaseline: PhasePolicy = table?.network_mode
    ? { mode: table.network_mode, allowedHosts: table.allowed_hosts ?? [] }
    : { ...baseline, allowedHosts: table?.allowed_hosts ?? baseline.allowedHosts };
  return { agent: phase(config.agent, baseline), verifier: phase(config.verifier, verifierBaseline) };
}

/** How a phase's policy reads in notes and errors: `allowlist (pypi.org, *.github.com)`. */
export function describePolicy(policy: PhasePolicy): string {
  if (policy.mode !== 'allowlist') return policy.mode;
  return policy.allowedHosts.length === 0 ? 'allowlist (empty: nothing allowed)' : `allowlist (${policy.allowedHosts.join(', ')})`;
}

function ipv4Number(address: string): number {
  return address.split('.').reduce((value, part) => value * 256 + Number(part), 0);
}

const V4_INTERNAL: ReadonlyArray<[string, number]> = [
  ['0.0.0.0', 8], // this network
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
];

/**
 * True for an address a name must never lead the proxy to: loopback, link-local, private,
 * carrier-grade NAT, multicast, unspecified and the like, in IPv4, IPv6 and IPv4 mapped into IPv6.
 */
export function isInternalAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) {
    const value = ipv4Number(address);
    return V4_INTERNAL.some(([base, bits]) => (value >>> (32 - bits)) === (ipv4Number(base) >>> (32 - bits)));
  }
  if (family !== 6) return true;
  const groups = expandIpv6(address.toLowerCase());
  if (groups === undefined) return true;
  if (groups.slice(0, 7).every((group) => group === 0) && (groups[7] === 0 || groups[7] === 1)) return true; // :: and ::1
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return isInternalAddress(`${groups[6]! >> 8}.${groups[6]! & 255}.${groups[7]! >> 8}.${groups[7]! & 255}`);
  }
  const first = groups[0]!;
  return (first & 0xfe00) === 0xfc00 || (first & 0xffc0) === 0xfe80 || (first & 0xff00) === 0xff00 || (first === 0x64 && groups[1] === 0xff9b);
}

function expandIpv6(address: string): number[] | undefined {
  const [head, tail, extra] = address.split('::');
  if (extra !== undefined) return undefined;
  const part = (text: string | undefined) => (text ? text.split(':') : []);
  const convert = (groups: string[]) => groups.flatMap((group) => (group.includes('.') ? [ipv4Number(group) >>> 16, ipv4Number(group) & 0xffff] : [parseInt(group, 16)]));
  const left = convert(part(head));
  const right = convert(part(tail));
  const missing = 8 - left.length - right.length;
  if (tail === undefined) return left.length === 8 ? left : undefined;
  if (missing < 0) return undefined;
  return [...left, ...new Array<number>(missing).fill(0), ...right];
}

/** Normalises a host as a request names it: lower case, no trailing dot, IPv6 without brackets. */
export function normalHost(host: string): string {
  return host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');
}

/** The rule that lets `host:port` through, if any (host already normal). */
export function matchRule(rules: readonly HostRule[], host: string, port: number): HostRule | undefined {
  const address = isIP(host) !== 0;
  return rules.find((rule) => {
    if (rule.port !== undefined ? rule.port !== port : port !== 80 && port !== 443) return false;
    if (rule.address || address) return rule.address && address && sameAddress(rule.host, host);
    return rule.wildcard ? host.endsWith(`.${rule.host}`) : host === rule.host;
  });
}

function sameAddress(a: string, b: string): boolean {
  if (isIP(a) !== isIP(b)) return false;
  if (isIP(a) === 4) return a === b;
  return expandIpv6(a)?.join(':') === expandIpv6(b)?.join(':');
}

/** The most variables `[environment.env]` may set, and the longest value. */
export const MAX_TASK_ENV = 256;
export const MAX_TASK_ENV_VALUE = 32 * 1024;

/**
 * Names a task may never set: Belay's own (its gateway's and proxy's, `TERM_*` and `BELAY_*`)
 * and the environment's base (PATH, HOME, LANG, TERM), which the backend gives.
 */
export function reservedVariable(name: string): boolean {
  return /^(?:TERM|PATH|HOME|LANG|SHELL|USER)$/.test(name) || /^(?:TERM_|BELAY_|LD_)/.test(name) || /^(?:https?|all|no|ftp)_proxy$/i.test(name);
}

/**
 * `[environment.env]`: the task's variables for both phases. Values are the text written (numbers
 * and booleans as TOML writes them); nothing is expanded, so no host variable or secret goes in.
 */
export const TaskEnvSchema = z
  .record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
  .superRefine((env, ctx) => {
    const names = Object.keys(env);
    if (names.length > MAX_TASK_ENV) ctx.addIssue({ code: 'custom', message: `at most ${MAX_TASK_ENV} variables` });
    for (const [name, value] of Object.entries(env)) {
      const text = String(value);
      if (!/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: 'a variable name is letters, digits and _, not starting with a digit' });
      else if (reservedVariable(name)) ctx.addIssue({ code: 'custom', path: [name], message: `${name} is Belay's own variable; a task may not set it` });
      if (text.includes('\0')) ctx.addIssue({ code: 'custom', path: [name], message: 'the value holds a NUL character' });
      if (Buffer.byteLength(text) > MAX_TASK_ENV_VALUE) ctx.addIssue({ code: 'custom', path: [name], message: `the value is over ${MAX_TASK_ENV_VALUE} bytes` });
    }
  })
  .transform((env) => Object.fromEntries(Object.entries(env).map(([name, value]) => [name, String(value)])));

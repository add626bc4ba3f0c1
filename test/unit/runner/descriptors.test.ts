// Each protocol and backend is described once, in the runner's tables: package.json's settings
// (the enums and their descriptions), the command lines' help and the pickers read those tables,
// and this test holds the manifest to them, so a description that drifts in one place fails here.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../../../scripts/lib/paths.ts';
import { AUTOMATIC_DESCRIPTION, BACKENDS, chooseBackend } from '../../../src/runner/core/backends/choose.ts';
import { BackendUnavailableError } from '../../../src/runner/core/backends/backend.ts';
import { protocolDescriptors } from '../../../src/runner/core/protocols/descriptors.ts';
import { PROTOCOLS } from '../../../src/runner/core/records/records.ts';
import { usage as runUsage } from '../../../src/cli/run.ts';
import { usage as agentUsage } from '../../../src/cli/agent.ts';

interface EnumSetting {
  enum?: string[];
  enumDescriptions?: string[];
}
interface Manifest {
  contributes: {
    configuration: {
      properties: Record<string, EnumSetting & { items?: { properties?: Record<string, EnumSetting> } }>;
    };
  };
}

const manifest = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as Manifest;

/** Where the manifest differs from the tables, one line each ("belay.runner.backend: …"). */
function drift(m: Manifest): string[] {
  const found: string[] = [];
  const compare = (where: string, setting: EnumSetting | undefined, names: string[], descriptions: string[]) => {
    if (!setting) return void found.push(`${where}: missing`);
    if (JSON.stringify(setting.enum) !== JSON.stringify(names)) found.push(`${where}: enum ${JSON.stringify(setting.enum)}, the table says ${JSON.stringify(names)}`);
    names.forEach((name, i) => {
      if (setting.enumDescriptions?.[i] !== descriptions[i]) found.push(`${where}: the description of ${name} is not the table's`);
    });
    if ((setting.enumDescriptions?.length ?? 0) !== names.length) found.push(`${where}: ${setting.enumDescriptions?.length ?? 0} descriptions for ${names.length} names`);
  };
  const properties = m.contributes.configuration.properties;
  const protocols = protocolDescriptors();
  compare('belay.agents[].protocol', properties['belay.agents']?.items?.properties?.['protocol'], protocols.map((d) => d.name), protocols.map((d) => d.description));
  compare('belay.runner.backend', properties['belay.runner.backend'], ['auto', ...BACKENDS.map((b) => b.name)], [AUTOMATIC_DESCRIPTION, ...BACKENDS.map((b) => b.description)]);
  return found;
}

describe('protocol and backend descriptors', () => {
  it('package.json names and describes every protocol and backend as the tables do', () => {
    assert.deepEqual(drift(manifest), []);
  });

  it('a description, a name or an order that drifts in package.json is caught, saying where', () => {
    const changed = (edit: (m: Manifest) => void) => {
      const copy = structuredClone(manifest);
      edit(copy);
      return drift(copy);
    };
    assert.deepEqual(
      changed((m) => (m.contributes.configuration.properties['belay.agents']!.items!.properties!['protocol']!.enumDescriptions![1] = 'SDK 2.0: an HTTP server.')),
      ['belay.agents[].protocol: the description of sdk2 is not the table\'s'],
    );
    const backend = (m: Manifest) => m.contributes.configuration.properties['belay.runner.backend']!;
    assert.match(changed((m) => backend(m).enum!.pop()).join('\n'), /^belay\.runner\.backend: enum \["auto","container","sandbox"\], the table says \["auto","container","sandbox","local"\]$/m);
    assert.match(changed((m) => backend(m).enum!.reverse()).join('\n'), /belay\.runner\.backend: enum/);
    assert.match(changed((m) => backend(m).enumDescriptions!.push('one too many')).join('\n'), /belay\.runner\.backend: 5 descriptions for 4 names/);
    assert.deepEqual(changed((m) => delete m.contributes.configuration.properties['belay.runner.backend']), ['belay.runner.backend: missing']);
  });

  it('every protocol records know has a descriptor, and every descriptor a protocol', () => {
    assert.deepEqual(
      protocolDescriptors().map((d) => d.name),
      [...PROTOCOLS],
    );
  });

  it('the command lines’ help names and describes what the tables hold', () => {
    for (const d of protocolDescriptors()) {
      assert.ok(runUsage.replace(/\s+/g, ' ').includes(`${d.name}: ${d.usage}`), `belay run --help describes ${d.name}`);
      assert.ok(agentUsage.includes(`${d.title.padEnd(10)}${d.probeUsage}`), `belay agent --help describes the probe of ${d.name}`);
    }
    assert.match(runUsage, new RegExp(`--protocol ${protocolDescriptors().map((d) => d.name).join('\\|')}\\n`));
    assert.match(runUsage, new RegExp(`--backend ${BACKENDS.map((b) => b.name).join('\\|')}\\n`));
    for (const b of BACKENDS) assert.ok(runUsage.replace(/\s+/g, ' ').includes(`${b.name}: ${b.usage};`), `belay run --help describes ${b.name}`);
  });

  it('the local backend does not isolate and is never chosen by itself', () => {
    for (const b of BACKENDS) assert.equal(b.automatic && !b.isolated, false, `${b.name} is tried automatically only if it isolates`);
    assert.equal(BACKENDS.find((b) => b.name === 'local')?.isolated, false);
  });
});

describe('the one chooser (runs and micro-agents)', () => {
  const tried: string[] = [];
  const place = (name: string, works: boolean) => async (named: boolean) => {
    tried.push(`${name}${named ? ' (named)' : ''}`);
    if (!works) throw new BackendUnavailableError(name, 'not here');
    return name;
  };
  const noneWorks = (reasons: string) => `none works (${reasons})`;

  it('tries the container, then the sandbox, never local; a named backend is the only one tried', async () => {
    tried.length = 0;
    assert.equal(await chooseBackend('auto', { container: place('container', false), sandbox: place('sandbox', true), local: place('local', true) }, noneWorks), 'sandbox');
    assert.deepEqual(tried, ['container', 'sandbox']);
    tried.length = 0;
    await assert.rejects(chooseBackend(undefined, { container: place('container', false), sandbox: place('sandbox', false), local: place('local', true) }, noneWorks), {
      message: 'isolation unavailable: none works (container unavailable: not here; sandbox unavailable: not here)',
    });
    assert.deepEqual(tried, ['container', 'sandbox']);
    tried.length = 0;
    assert.equal(await chooseBackend('local', { container: place('container', true), sandbox: place('sandbox', true), local: place('local', true) }, noneWorks), 'local');
    await assert.rejects(chooseBackend('sandbox', { container: place('container', true), sandbox: place('sandbox', false), local: place('local', true) }, noneWorks), { message: 'sandbox unavailable: not here' });
    assert.deepEqual(tried, ['local (named)', 'sandbox (named)']);
  });

  it('lets any other failure through at once', async () => {
    const broken = async () => {
      throw new TypeError('a bug, not a missing backend');
    };
    await assert.rejects(chooseBackend('auto', { container: broken, sandbox: place('sandbox', true), local: place('local', true) }, noneWorks), TypeError);
  });
});

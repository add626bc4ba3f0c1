// What ships besides code: the user-facing README names every command and setting, its pictures
// exist and are all used, and the grammar's embedded languages are declared where VS Code reads them.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { repoRoot } from '../../../scripts/lib/paths.ts';

interface Manifest {
  contributes: {
    commands: { command: string; title: string }[];
    configuration: { properties: Record<string, unknown> };
    grammars: { scopeName: string; path: string; embeddedLanguages?: Record<string, string> }[];
  };
}
const manifest = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as Manifest;
const userReadme = readFileSync(path.join(repoRoot, 'marketplace', 'README.md'), 'utf8');

test('the user-facing README names every command and every setting', () => {
  const missingCommands = manifest.contributes.commands.filter((c) => !userReadme.includes(c.title)).map((c) => `${c.command} (${c.title})`);
  const missingSettings = Object.keys(manifest.contributes.configuration.properties).filter((k) => !userReadme.includes(`\`${k}\``));
  assert.deepEqual({ missingCommands, missingSettings }, { missingCommands: [], missingSettings: [] });
});

test("the user-facing README's pictures exist, and every picture shipped is shown", () => {
  const linked = [...userReadme.matchAll(/!\[[^\]]*\]\(([^)]+)\)/g)].map((m) => m[1]!);
  assert.ok(linked.length >= 3, 'the README shows a screenshot of each feature');
  const shipped = readdirSync(path.join(repoRoot, 'marketplace', 'screenshots')).map((f) => `screenshots/${f}`);
  assert.deepEqual([...linked].sort(), [...shipped].sort());
});

test("the grammar's embedded scopes and package.json's embeddedLanguages are the same set", () => {
  const entry = manifest.contributes.grammars.find((g) => g.scopeName === 'source.codingagent');
  assert.ok(entry, 'package.json declares the CodingAgent grammar');
  const grammar = readFileSync(path.join(repoRoot, entry.path), 'utf8');
  const scopes = new Set([...grammar.matchAll(/meta\.embedded\.block\.[a-z]+/g)].map((m) => m[0]));
  assert.deepEqual(Object.keys(entry.embeddedLanguages ?? {}).sort(), [...scopes].sort());
});

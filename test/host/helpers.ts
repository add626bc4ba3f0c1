import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { BelayApi } from '../../src/context.ts';

export const EXTENSION_ID = 'belay.belay';

export async function activateBelay(): Promise<{ extension: vscode.Extension<BelayApi>; api: BelayApi }> {
  const extension = vscode.extensions.getExtension<BelayApi>(EXTENSION_ID);
  assert.ok(extension, `extension ${EXTENSION_ID} is not installed in this host`);
  const api = await extension.activate();
  return { extension, api };
}

/** Resolves when `check` returns true after one of the `events` fires (or already holds). */
export function waitFor(description: string, check: () => boolean, events: vscode.Event<unknown>[], timeoutMs = 20_000): Promise<void> {
  if (check()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const subscriptions: vscode.Disposable[] = [];
    const done = (error?: Error) => {
      clearTimeout(timer);
      subscriptions.forEach((s) => s.dispose());
      if (error) reject(error);
      else resolve();
    };
    const timer = setTimeout(() => done(new Error(`timed out after ${timeoutMs} ms waiting for ${description}`)), timeoutMs);
    for (const event of events) subscriptions.push(event(() => check() && done()));
  });
}

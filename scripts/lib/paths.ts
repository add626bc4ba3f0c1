import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const cacheDir = path.join(repoRoot, '.cache');
export const resultsDir = path.join(repoRoot, 'test-results');

// `npm run package`: production bundles into belay-<version>.vsix.
import { statSync } from 'node:fs';
import { packageVsix } from './lib/package.ts';

const file = await packageVsix();
console.log(`${file} (${Math.round(statSync(file).size / 1024)} KiB)`);

// Installs the real VS Code (code-server) the tests and `npm start` use; a no-op when cached.
import { ensureHost } from './lib/host.ts';
console.log(await ensureHost());

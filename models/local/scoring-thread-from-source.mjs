// The scoring thread when the code runs from its TypeScript source (tsx, vitest): a worker thread on
// Node 20 does not get the loader tsx registered in the main thread, so it registers its own first.
import { register } from 'tsx/esm/api';

register();
await import('./scoring-thread.ts');

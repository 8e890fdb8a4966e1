// The scoring thread's task file when the code runs from its TypeScript source (tsx, vitest): a worker
// thread on Node 20 does not get the loader tsx registered in the main thread, so it registers its own
// before importing the .ts file, and hands piscina that file's task function.
import { register } from 'tsx/esm/api';

register();
const { default: score } = await import('./scoring-thread.ts');
export default score;

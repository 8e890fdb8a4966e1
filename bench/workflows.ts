/** The bench worker's workflow bundle: the Session and the bare baseline, served by one worker. */
export { session } from '../workflows/index.js';
export { benchBaseline } from './baseline-workflow.js';

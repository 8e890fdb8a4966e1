/** Workflow bundle entry: every workflow type the Session worker registers. */
export { session } from './session.js';

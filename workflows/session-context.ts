/** What the stages of an input need from the running Session. */
import type { SessionActivityProxies } from './activity-proxies.js';
import type { SessionStage, SessionState } from './state.js';

export interface SessionContext {
  readonly state: SessionState;
  readonly activities: SessionActivityProxies;
  /** Shows a stage in the Web UI's current details; without one, re-renders the current stage. */
  readonly show: (stage?: SessionStage) => void;
}

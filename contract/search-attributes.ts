/**
 * Typed search attributes the Session keeps up to date, so ops can list and filter Sessions in the
 * Temporal Web UI. They must be registered on the namespace (`npm start` does it for the dev server).
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const SessionStageKey = defineSearchAttributeKey('SessionStage', SearchAttributeType.KEYWORD);
export const SessionStatusKey = defineSearchAttributeKey('SessionStatus', SearchAttributeType.KEYWORD);
export const SessionParentKey = defineSearchAttributeKey('SessionParent', SearchAttributeType.KEYWORD);
export const SessionGoalKey = defineSearchAttributeKey('SessionGoal', SearchAttributeType.TEXT);

/** Name and type of every search attribute, as `temporal server start-dev --search-attribute` takes them. */
export const SEARCH_ATTRIBUTES = {
  SessionStage: 'Keyword',
  SessionStatus: 'Keyword',
  SessionParent: 'Keyword',
  SessionGoal: 'Text',
} as const;

/**
 * The agent step's delta outlet on a worker: deltas go out through the same publisher as the
 * Sessions' durable events. The id they follow comes with the step's request (`afterEvent`); only a
 * request from workflow code older than that field makes the step read it from the Session's
 * `events` query (the step may run on a worker that never ran the Session's workflow tasks, so no
 * local record would do).
 */
import type { Client } from '@temporalio/client';
import type { DeltaOutlet } from '../activities/agent-deltas.js';
import { eventsQuery } from '../contract/api.js';
import type { EventPublisher } from '../contract/events.js';
import { workflowIdFor } from '../contract/ids.js';

export function deltaOutlet(events: Pick<EventPublisher, 'publish'>, client: Client): DeltaOutlet {
  return {
    publish: (sessionId, event) => events.publish(sessionId, event),
    async lastEventId(sessionId) {
      const page = await client.workflow.getHandle(workflowIdFor(sessionId)).query(eventsQuery, { limit: 1 });
      return page.lastId;
    },
  };
}

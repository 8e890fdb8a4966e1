/**
 * The inbox's "answered by whom, when" trail: the answers (`tool.approved`, `tool.rejected`) that
 * the Sessions themselves recorded, with the approver they recorded (the signed one when signing is
 * on) and their workflow time — not what the gateway believes it sent. It covers the Sessions the
 * inbox has shown or answered (the newest MAX_SESSIONS), read incrementally from each one's log.
 */
import type { SessionEvent } from '../contract/events.js';
import type { EventsPage } from '../contract/events.js';

/** One answer as the Session recorded it. */
export interface AnsweredEntry {
  sessionId: string;
  approvalId: string;
  callId: string;
  tool: string;
  approved: boolean;
  /** The approver the Session recorded (null when the answer named none). */
  by: string | null;
  note: string | null;
  /** Workflow time of the answer (ms since the epoch). */
  at: number;
  /** The arguments it ran with when the approver edited them. */
  editedArguments: string | null;
}

const MAX_SESSIONS = 100;
const MAX_ENTRIES = 200;

/** Reads one page of a Session's event log after an id. */
export type ReadLog = (sessionId: string, after: string | undefined) => Promise<EventsPage>;

export class AnsweredTrail {
  /** Each followed Session and the last event id read from it (undefined: not read yet). */
  private readonly sessions = new Map<string, string | undefined>();
  private entries: AnsweredEntry[] = [];
  private reading: Promise<void> = Promise.resolve();

  constructor(private readonly readLog: ReadLog) {}

  /** Follows a Session's answers from now on (its log is read from the start on the next read). */
  follow(sessionId: string): void {
    if (this.sessions.has(sessionId)) return;
    this.sessions.set(sessionId, undefined);
    if (this.sessions.size > MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value as string);
  }

  /** The recorded answers of the followed Sessions, newest first. One read at a time. */
  read(): Promise<AnsweredEntry[]> {
    const next = this.reading.then(() => this.catchUp());
    this.reading = next.catch(() => undefined);
    return next.then(() => [...this.entries].sort((a, b) => b.at - a.at));
  }

  private async catchUp(): Promise<void> {
    await Promise.all(
      [...this.sessions.keys()].map(async (sessionId) => {
        let after = this.sessions.get(sessionId);
        for (let more = true; more;) {
          // A Session that is gone or unreadable now keeps what was read of it.
          const page = await this.readLog(sessionId, after).catch(() => null);
          if (!page) return;
          for (const event of page.events) this.take(sessionId, event);
          after = page.events.at(-1)?.id ?? after;
          more = page.more;
        }
        if (this.sessions.has(sessionId)) this.sessions.set(sessionId, after);
      }),
    );
    if (this.entries.length > MAX_ENTRIES) {
      this.entries = this.entries.sort((a, b) => b.at - a.at).slice(0, MAX_ENTRIES);
    }
  }

  private take(sessionId: string, event: SessionEvent): void {
    if (event.kind !== 'tool.approved' && event.kind !== 'tool.rejected') return;
    this.entries.push({
      sessionId,
      approvalId: event.approvalId,
      callId: event.callId,
      tool: event.tool,
      approved: event.kind === 'tool.approved',
      by: event.by,
      note: event.note,
      at: event.at,
      editedArguments:
        event.kind === 'tool.approved' && event.originalArguments !== null ? (event.arguments ?? null) : null,
    });
  }
}

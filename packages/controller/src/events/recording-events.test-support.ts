// An event recorder for tests that keeps each event in memory, in the order the pass recorded it.
import type { EventRecorder } from "./event-recorder.js";

export interface RecordedEvent {
  name: string;
  reason: string;
  note: string;
}

/** A recorder and the list it appends to (synchronously, so a pass's events are there when it returns). */
export function recordingEvents(): { events: EventRecorder; recorded: RecordedEvent[] } {
  const recorded: RecordedEvent[] = [];
  return { recorded, events: { record: async (subject, reason, note) => void recorded.push({ name: subject.name, reason, note }) } };
}

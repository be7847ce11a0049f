/**
 * The notifications' one bounded queue: what the recorder hands over is delivered in the background, retried with
 * exponential back-off up to a cap, and dropped when the queue is full, so a slow or absent receiver never holds up a pass.
 */
import type { NotificationResult } from "../metrics/captf-metrics.js";
import { exponentialBackoffMillis } from "../runtime/backoff.js";
import { realClock, type Clock } from "../runtime/clock.js";

/** One try's outcome: delivered, or why not and whether another try may succeed. */
export type AttemptOutcome = { ok: true } | { ok: false; retry: boolean; error: string };

export interface Delivery {
  /** The receiver's name: the metric's label and the logs' field. */
  receiver: string;
  /** The event reason notified, for the receiver's status. */
  reason?: string;
  /** One try; a throw counts as a retryable failure with its message. */
  attempt(): Promise<AttemptOutcome>;
}

export interface DeliveryQueueOptions {
  /** Deliveries held at once, waiting, in flight or between retries; one more is dropped. */
  capacity: number;
  /** Deliveries to one receiver held at once; one more is dropped, so one that hangs cannot fill the queue the others share. */
  receiverCapacity: number;
  /** Tries in flight at once. */
  concurrency: number;
  /** Tries in flight at once to one receiver: one that hangs holds only these slots, the others' deliveries go on. */
  receiverConcurrency: number;
  /** Tries per delivery, the first included. */
  maxAttempts: number;
  /** The wait before the second try; doubled after each failure up to maxBackoffMillis. */
  baseBackoffMillis: number;
  maxBackoffMillis: number;
  clock?: Clock;
  /** Each delivery's end: sent, failed (its last error) or dropped. */
  onResult(delivery: Delivery, result: NotificationResult, error?: string): void;
}

export const deliveryQueueDefaults = {
  capacity: 256,
  receiverCapacity: 64,
  concurrency: 4,
  receiverConcurrency: 2,
  maxAttempts: 5,
  baseBackoffMillis: 1000,
  maxBackoffMillis: 30_000,
};

interface Held {
  delivery: Delivery;
  failures: number;
}

export class DeliveryQueue {
  readonly #o: DeliveryQueueOptions;
  readonly #clock: Clock;
  readonly #ready: Held[] = [];
  #held = 0;
  #inFlight = 0;
  readonly #inFlightTo = new Map<string, number>();
  readonly #heldFor = new Map<string, number>();
  #idle: (() => void)[] = [];

  constructor(options: DeliveryQueueOptions) {
    this.#o = options;
    this.#clock = options.clock ?? realClock;
  }

  /** Deliveries held now (waiting, in flight or between retries). */
  get size(): number {
    return this.#held;
  }

  /** Takes the delivery, or drops it (reported as dropped) when the queue or its receiver's share is full. Never waits. */
  enqueue(delivery: Delivery): boolean {
    if (this.#held >= this.#o.capacity) {
      this.#o.onResult(delivery, "dropped", "the manager's notification queue was full");
      return false;
    }
    const heldForReceiver = this.#heldFor.get(delivery.receiver) ?? 0;
    if (heldForReceiver >= this.#o.receiverCapacity) {
      this.#o.onResult(delivery, "dropped", `the receiver's share of the notification queue (${this.#o.receiverCapacity}) was full`);
      return false;
    }
    this.#heldFor.set(delivery.receiver, heldForReceiver + 1);
    this.#held++;
    this.#ready.push({ delivery, failures: 0 });
    this.#pump();
    return true;
  }

  /** Resolves once nothing is held (for tests and a graceful stop). */
  idle(): Promise<void> {
    if (this.#held === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #pump(): void {
    while (this.#inFlight < this.#o.concurrency) {
      // The oldest delivery whose receiver has a slot left.
      const index = this.#ready.findIndex((held) => (this.#inFlightTo.get(held.delivery.receiver) ?? 0) < this.#o.receiverConcurrency);
      if (index < 0) return;
      const [held] = this.#ready.splice(index, 1);
      this.#inFlight++;
      this.#inFlightTo.set(held!.delivery.receiver, (this.#inFlightTo.get(held!.delivery.receiver) ?? 0) + 1);
      void this.#try(held!);
    }
  }

  async #try(held: Held): Promise<void> {
    const outcome = await held.delivery
      .attempt()
      .catch(
        (error: unknown): AttemptOutcome => ({ ok: false, retry: true, error: error instanceof Error ? error.message : String(error) }),
      );
    this.#inFlight--;
    const receiver = held.delivery.receiver;
    if ((this.#inFlightTo.get(receiver) ?? 0) <= 1) this.#inFlightTo.delete(receiver);
    else this.#inFlightTo.set(receiver, this.#inFlightTo.get(receiver)! - 1);
    if (outcome.ok) this.#finish(held, "sent");
    else if (outcome.retry && held.failures + 1 < this.#o.maxAttempts) {
      const wait = exponentialBackoffMillis(held.failures, this.#o.baseBackoffMillis, this.#o.maxBackoffMillis);
      held.failures++;
      this.#clock.setTimeout(() => {
        this.#ready.push(held);
        this.#pump();
      }, wait);
    } else this.#finish(held, "failed", outcome.error);
    this.#pump();
  }

  #finish(held: Held, result: NotificationResult, error?: string): void {
    this.#held--;
    const receiver = held.delivery.receiver;
    if ((this.#heldFor.get(receiver) ?? 0) <= 1) this.#heldFor.delete(receiver);
    else this.#heldFor.set(receiver, this.#heldFor.get(receiver)! - 1);
    this.#o.onResult(held.delivery, result, error);
    if (this.#held === 0) for (const resolve of this.#idle.splice(0)) resolve();
  }
}

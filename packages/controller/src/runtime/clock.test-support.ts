import type { Clock, TimerHandle } from "./clock.js";

interface FakeTimer {
  at: number;
  seq: number;
  callback: () => void;
}

/** A manual clock for tests: time moves only through {@link FakeClock.advance}. */
export class FakeClock implements Clock {
  #now: number;
  #seq = 0;
  readonly #timers = new Set<FakeTimer>();

  constructor(startMillis = 1_700_000_000_000) {
    this.#now = startMillis;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    const timer: FakeTimer = { at: this.#now + Math.max(0, ms), seq: this.#seq++, callback };
    this.#timers.add(timer);
    return timer;
  }

  clearTimeout(handle: TimerHandle): void {
    this.#timers.delete(handle as FakeTimer);
  }

  /** How many timers are pending. */
  get pendingTimers(): number {
    return this.#timers.size;
  }

  /** Moves time forward by `ms`, firing due timers in time order and letting promise callbacks run after each. */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    for (;;) {
      const next = [...this.#timers].filter((t) => t.at <= target).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!next) break;
      this.#timers.delete(next);
      this.#now = Math.max(this.#now, next.at);
      next.callback();
      await flushPromises();
    }
    this.#now = target;
    await flushPromises();
  }
}

/** Lets every queued promise callback (and those they queue, a few levels deep) run. */
export async function flushPromises(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

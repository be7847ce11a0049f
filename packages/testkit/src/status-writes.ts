// How the chroot kubelet sends a Pod's status: one write at a time, in order, as a real kubelet's status manager does, and a write
// still waiting when a newer one is queued is dropped, since the newer one carries the whole status (each is a full strategic-merge
// patch of pods/status). Under load, while the API server takes its time, the transitions in between reach it as one write.

/** A Pod's queue of status writes: `write` queues one, `settled` resolves once every queued write has run or been dropped. */
export class LatestStatusWrites {
  private chain: Promise<void> = Promise.resolve();
  private queued = 0;
  /** Writes dropped because a newer one was queued behind them. */
  dropped = 0;

  write(send: () => Promise<void>): void {
    const mine = ++this.queued;
    this.chain = this.chain.then(() => {
      if (mine !== this.queued) {
        this.dropped++;
        return undefined;
      }
      // A write that failed (the kubelet's own retries used up) does not stop the ones after it.
      return send().catch(() => undefined);
    });
  }

  settled(): Promise<void> {
    return this.chain;
  }
}

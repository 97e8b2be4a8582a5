export interface StatementBatcherOptions {
  /** The most requests one statement carries. */
  maxBatch: number;
  /** The most statements in flight at once; while they are, new requests wait for the next one. */
  maxInFlight: number;
}

/**
 * Group commit for one kind of statement: concurrent requests in this process go together, as
 * one statement in one round trip and one transaction, instead of one each. Self-clocking: a
 * lone request goes at the next turn of the event loop; requests that come while `maxInFlight`
 * statements are out wait and go together in the next one, so batches grow with the load.
 *
 * `many` answers its items in order, one answer each, in one transaction; when it throws,
 * nothing of it happened (a deadlock PostgreSQL broke, any error), so each of its items is run
 * again with `one`, on its own, and succeeds or fails as it would have alone. A batch of one is
 * `one` itself. DataLoader does the gathering but caches by key, has no cap on the batches in
 * flight (so no self-clocking) and fails every item of a failed batch.
 */
export class StatementBatcher<I, O> {
  private readonly waiting: { item: I; resolve: (answer: O) => void; reject: (err: unknown) => void }[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly many: (items: I[]) => Promise<O[]>,
    private readonly one: (item: I) => Promise<O>,
    private readonly options: StatementBatcherOptions,
    /** Told when a batch failed and its items go one by one (for a log line). */
    private readonly onBatchFailed: (err: unknown, size: number) => void = () => undefined,
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.options.maxInFlight || this.waiting.length === 0) return;
    this.scheduled = true;
    // setImmediate, not a microtask: the requests of this turn of the event loop go together.
    setImmediate(() => {
      this.scheduled = false;
      while (this.inFlight < this.options.maxInFlight && this.waiting.length > 0) {
        this.inFlight++;
        void this.send(this.waiting.splice(0, this.options.maxBatch)).finally(() => {
          this.inFlight--;
          this.schedule();
        });
      }
    });
  }

  private async send(batch: { item: I; resolve: (answer: O) => void; reject: (err: unknown) => void }[]): Promise<void> {
    if (batch.length > 1) {
      let answers: O[] | undefined;
      try {
        answers = await this.many(batch.map((b) => b.item));
      } catch (err) {
        this.onBatchFailed(err, batch.length);
      }
      if (answers) {
        batch.forEach((b, i) => b.resolve(answers[i]));
        return;
      }
    }
    await Promise.all(
      batch.map(async (b) => {
        try {
          b.resolve(await this.one(b.item));
        } catch (err) {
          b.reject(err);
        }
      }),
    );
  }
}

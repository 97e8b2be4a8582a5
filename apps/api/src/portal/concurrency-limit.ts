/**
 * At most `max` tasks run at once; the others wait their turn, first come first served. For
 * work that is CPU and memory heavy on purpose (argon2: ~19 MiB and tens of milliseconds each),
 * so a flood of it queues instead of taking the machine.
 */
export class ConcurrencyLimit {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly max: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.max) await new Promise<void>((turn) => this.waiting.push(turn));
    else this.running++;
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      // The slot passes straight to the next in line: `running` stays counted.
      if (next) next();
      else this.running--;
    }
  }

  /** Tasks waiting for a slot now. */
  get queued(): number {
    return this.waiting.length;
  }
}

import { StatementBatcher } from './statement-batcher';

/** A statement under test's control: each call waits until the test lets it answer. */
class FakeStatement {
  readonly calls: { kind: 'many' | 'one'; items: number[]; release: (fail?: Error) => void }[] = [];
  inFlight = 0;
  mostInFlight = 0;
  /** Items whose one() fails on its own. */
  readonly failing = new Set<number>();

  many = (items: number[]): Promise<string[]> => this.call('many', items, () => items.map((i) => `answer ${i}`));

  one = (item: number): Promise<string> =>
    this.call('one', [item], () => {
      if (this.failing.has(item)) throw new Error(`item ${item} failed`);
      return `answer ${item}`;
    });

  private call<T>(kind: 'many' | 'one', items: number[], answer: () => T): Promise<T> {
    this.inFlight++;
    this.mostInFlight = Math.max(this.mostInFlight, this.inFlight);
    return new Promise<T>((resolve, reject) => {
      this.calls.push({
        kind,
        items,
        release: (fail) => {
          this.inFlight--;
          if (fail) return reject(fail);
          try {
            resolve(answer());
          } catch (err) {
            reject(err);
          }
        },
      });
    });
  }
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Lets every call out so far answer, turn after turn, until none is left waiting. */
async function drain(statement: FakeStatement): Promise<void> {
  for (let released = 0; ;) {
    // A finished batch schedules the next on a turn of its own.
    await turn();
    await turn();
    const open = statement.calls.slice(released);
    if (open.length === 0) return;
    released += open.length;
    for (const call of open) call.release();
  }
}

describe('StatementBatcher', () => {
  it('sends a lone request at once, as the single statement', async () => {
    const statement = new FakeStatement();
    const batcher = new StatementBatcher(statement.many, statement.one, { maxBatch: 64, maxInFlight: 1 });
    const answer = batcher.submit(7);
    await turn();
    expect(statement.calls.map((c) => [c.kind, c.items])).toEqual([['one', [7]]]);
    statement.calls[0].release();
    await expect(answer).resolves.toBe('answer 7');
  });

  it('sends requests of one turn as one statement and gives each its own answer', async () => {
    const statement = new FakeStatement();
    const batcher = new StatementBatcher(statement.many, statement.one, { maxBatch: 64, maxInFlight: 1 });
    const answers = [3, 1, 2].map((i) => batcher.submit(i));
    await drain(statement);
    await expect(Promise.all(answers)).resolves.toEqual(['answer 3', 'answer 1', 'answer 2']);
    expect(statement.calls.map((c) => [c.kind, c.items])).toEqual([['many', [3, 1, 2]]]);
  });

  it('puts at most maxBatch requests in one statement', async () => {
    const statement = new FakeStatement();
    const batcher = new StatementBatcher(statement.many, statement.one, { maxBatch: 64, maxInFlight: 1 });
    const answers = Array.from({ length: 150 }, (_, i) => batcher.submit(i));
    await drain(statement);
    expect(await Promise.all(answers)).toEqual(Array.from({ length: 150 }, (_, i) => `answer ${i}`));
    expect(statement.calls.map((c) => c.items.length)).toEqual([64, 64, 22]);
    expect(statement.mostInFlight).toBe(1);
  });

  it('keeps at most maxInFlight statements out; what comes meanwhile goes together in the next', async () => {
    const statement = new FakeStatement();
    const batcher = new StatementBatcher(statement.many, statement.one, { maxBatch: 64, maxInFlight: 2 });
    const answers = [batcher.submit(1)];
    await turn();
    answers.push(batcher.submit(2));
    await turn();
    // Two out: these four wait, whatever the turns they came in.
    answers.push(batcher.submit(3), batcher.submit(4));
    await turn();
    answers.push(batcher.submit(5), batcher.submit(6));
    await turn();
    expect(statement.calls.map((c) => c.items)).toEqual([[1], [2]]);
    expect(statement.inFlight).toBe(2);
    statement.calls[1].release();
    await turn();
    await turn();
    expect(statement.calls.map((c) => c.items)).toEqual([[1], [2], [3, 4, 5, 6]]);
    await drain(statement);
    await expect(Promise.all(answers)).resolves.toEqual([1, 2, 3, 4, 5, 6].map((i) => `answer ${i}`));
    expect(statement.mostInFlight).toBe(2);
  });

  it('runs a failed batch again one by one: each item succeeds or fails on its own', async () => {
    const statement = new FakeStatement();
    const failures: [unknown, number][] = [];
    const batcher = new StatementBatcher(statement.many, statement.one, { maxBatch: 64, maxInFlight: 1 }, (err, size) => failures.push([err, size]));
    statement.failing.add(2);
    const answers = [1, 2, 3].map((i) => batcher.submit(i).catch((err: Error) => err.message));
    await turn();
    const deadlock = Object.assign(new Error('deadlock detected'), { code: '40P01' });
    statement.calls[0].release(deadlock);
    await drain(statement);
    await expect(Promise.all(answers)).resolves.toEqual(['answer 1', 'item 2 failed', 'answer 3']);
    expect(statement.calls.map((c) => [c.kind, c.items])).toEqual([
      ['many', [1, 2, 3]],
      ['one', [1]],
      ['one', [2]],
      ['one', [3]],
    ]);
    expect(failures).toEqual([[deadlock, 3]]);
  });

  it('fails a lone request that fails, and goes on with the next ones', async () => {
    const statement = new FakeStatement();
    const batcher = new StatementBatcher(statement.many, statement.one, { maxBatch: 64, maxInFlight: 1 });
    statement.failing.add(1);
    const first = batcher.submit(1);
    await drain(statement);
    await expect(first).rejects.toThrow('item 1 failed');
    const second = batcher.submit(2);
    await drain(statement);
    await expect(second).resolves.toBe('answer 2');
  });
});

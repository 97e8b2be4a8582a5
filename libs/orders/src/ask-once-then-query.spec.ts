import { Logger } from '@nestjs/common';
import { type MoneyOutTalk, askOnceThenQuery } from './ask-once-then-query';

interface Status {
  state: 'done' | 'refused' | 'processing' | 'not_found';
  channelNo: string | null;
}

/** A fake channel that answers `ask` and then each `query` in turn, and a record of every call in order. */
function talk(stored: { requestedAt?: Date; channelNo?: string }, answers: { ask?: Status; queries?: Status[] }, confirmWhenTaken = true) {
  const calls: string[] = [];
  const queries = [...(answers.queries ?? [])];
  const steps: MoneyOutTalk<Status> = {
    logFields: { refund_no: 'R1' },
    requestedAt: stored.requestedAt ?? null,
    channelNo: stored.channelNo ?? null,
    ourNo: 'R1',
    ask: async () => (calls.push('ask'), answers.ask ?? { state: 'not_found', channelNo: null }),
    query: async () => (calls.push('query'), queries.shift() ?? { state: 'not_found', channelNo: null }),
    markRequested: async () => void calls.push('markRequested'),
    markAccepted: async (no) => void calls.push(`markAccepted ${no}`),
    channelNoOf: (s) => s.channelNo,
    processing: (channelNo) => ({ state: 'processing', channelNo }),
    confirmWhenTaken,
  };
  return { steps, calls };
}

describe('askOnceThenQuery', () => {
  const logger = new Logger('test');
  beforeAll(() => Logger.overrideLogger(false));

  it('never asked: stores the request before asking, numbers what the channel took, and confirms by a query', async () => {
    const { steps, calls } = talk({}, { ask: { state: 'processing', channelNo: 'C9' }, queries: [{ state: 'done', channelNo: 'C9' }] });
    expect(await askOnceThenQuery(steps, logger)).toEqual({ state: 'done', channelNo: 'C9' });
    expect(calls).toEqual(['markRequested', 'ask', 'markAccepted C9', 'query']);
  });

  it('numbers a taken request with our number when the channel gives none, and keeps "processing" when the confirming query finds nothing', async () => {
    const { steps, calls } = talk({}, { ask: { state: 'processing', channelNo: null } });
    expect(await askOnceThenQuery(steps, logger)).toEqual({ state: 'processing', channelNo: null });
    expect(calls).toEqual(['markRequested', 'ask', 'markAccepted R1', 'query']);
  });

  it('without confirmWhenTaken, a taken request is not queried at once', async () => {
    const { steps, calls } = talk({}, { ask: { state: 'processing', channelNo: 'C9' } }, false);
    expect((await askOnceThenQuery(steps, logger)).state).toBe('processing');
    expect(calls).toEqual(['markRequested', 'ask', 'markAccepted C9']);
  });

  it('a refusal is answered as is, nothing numbered', async () => {
    const { steps, calls } = talk({}, { ask: { state: 'refused', channelNo: null } });
    expect((await askOnceThenQuery(steps, logger)).state).toBe('refused');
    expect(calls).toEqual(['markRequested', 'ask']);
  });

  it('asked before, outcome lost: queries and never asks again when the channel knows it', async () => {
    for (const known of [
      { state: 'done', channelNo: 'C1' },
      { state: 'refused', channelNo: null },
    ] as const) {
      const { steps, calls } = talk({ requestedAt: new Date() }, { queries: [known] });
      expect(await askOnceThenQuery(steps, logger)).toEqual(known);
      expect(calls).toEqual(['query']);
    }
  });

  it('asked before and found processing: numbered once, not asked', async () => {
    const { steps, calls } = talk({ requestedAt: new Date() }, { queries: [{ state: 'processing', channelNo: 'C2' }] });
    expect((await askOnceThenQuery(steps, logger)).state).toBe('processing');
    expect(calls).toEqual(['query', 'markAccepted C2']);
    const numbered = talk({ requestedAt: new Date(), channelNo: 'C2' }, { queries: [{ state: 'processing', channelNo: 'C2' }] });
    await askOnceThenQuery(numbered.steps, logger);
    expect(numbered.calls).toEqual(['query']);
  });

  it('taken before but now not found by the query: still processing under its number, never asked again', async () => {
    const { steps, calls } = talk({ requestedAt: new Date(), channelNo: 'C3' }, { queries: [{ state: 'not_found', channelNo: null }] });
    expect(await askOnceThenQuery(steps, logger)).toEqual({ state: 'processing', channelNo: 'C3' });
    expect(calls).toEqual(['query']);
  });

  it('asked before but never received by the channel (not found, never numbered): asks again', async () => {
    const { steps, calls } = talk({ requestedAt: new Date() }, { ask: { state: 'done', channelNo: 'C4' }, queries: [{ state: 'not_found', channelNo: null }] });
    expect((await askOnceThenQuery(steps, logger)).state).toBe('done');
    expect(calls).toEqual(['query', 'markRequested', 'ask']);
  });
});

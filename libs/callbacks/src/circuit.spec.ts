import { CLOSED_CIRCUIT, Circuit } from './circuit';

const RULES = { failures: 3, probeMs: 60_000 };

describe('Circuit (SPEC 7 Fairness: one key, consecutive failures, one probe per interval)', () => {
  it('opens at the rule-th failure in a row, once, and waits a probe interval', () => {
    let state = CLOSED_CIRCUIT;
    const transitions = [];
    for (let i = 0; i < 4; i++) {
      const next = Circuit.after(state, 'failure', RULES, 1_000);
      transitions.push(next.transition);
      state = next.state;
    }
    expect(transitions).toEqual([null, null, 'opened', null]);
    expect(state).toEqual({ failures: 4, openSince: 1_000, nextProbeAt: 61_000 });
  });

  it('a success in between starts the count again; our own failures count for nothing', () => {
    let { state } = Circuit.after(CLOSED_CIRCUIT, 'failure', RULES, 0);
    state = Circuit.after(state, 'failure', RULES, 0).state;
    state = Circuit.after(state, 'none', RULES, 0).state;
    expect(state.failures).toBe(2);
    state = Circuit.after(state, 'success', RULES, 0).state;
    expect(state).toEqual(CLOSED_CIRCUIT);
  });

  it('open: holds until the probe time, lets one probe through, and the probe moves the next one on', () => {
    const open = { failures: 3, openSince: 0, nextProbeAt: 60_000 };
    expect(Circuit.admits(open, 59_999)).toBe('held');
    expect(Circuit.admits(open, 60_000)).toBe('probe');
    const probing = Circuit.probing(open, RULES, 60_000);
    expect(Circuit.admits(probing, 60_001)).toBe('held');
    expect(Circuit.after(probing, 'failure', RULES, 61_000, true)).toEqual({ state: { ...probing, failures: 4 }, transition: 'probe_failed' });
    // A failure of an attempt already in flight when it opened moves nothing.
    expect(Circuit.after(probing, 'failure', RULES, 61_000, false)).toEqual({ state: { ...probing, failures: 4 }, transition: null });
    expect(Circuit.after(probing, 'success', RULES, 61_000, true)).toEqual({ state: CLOSED_CIRCUIT, transition: 'closed' });
  });

  it('closed: every due delivery may go', () => {
    expect(Circuit.admits(CLOSED_CIRCUIT, 0)).toBe('closed');
    expect(Circuit.after(CLOSED_CIRCUIT, 'success', RULES, 0).transition).toBeNull();
  });
});

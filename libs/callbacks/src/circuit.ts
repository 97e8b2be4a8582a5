/** What an attempt tells about its (merchant, destination) circuit: our own failures tell nothing. */
export type CircuitSignal = 'success' | 'failure' | 'none';

/** SPEC 7 Fairness's knobs: CALLBACK_CIRCUIT_FAILURES and CALLBACK_CIRCUIT_PROBE_SECONDS (in ms). */
export interface CircuitRules {
  failures: number;
  probeMs: number;
}

/** One key's circuit: closed while openSince is null; open, it lets one probe through at nextProbeAt. Times in ms. */
export interface CircuitState {
  failures: number;
  openSince: number | null;
  nextProbeAt: number | null;
}

/** A change worth a log line and a mirror row in PostgreSQL. */
export type CircuitTransition = 'opened' | 'probe_failed' | 'closed';

export const CLOSED_CIRCUIT: CircuitState = { failures: 0, openSince: null, nextProbeAt: null };

/**
 * SPEC 7 Fairness's circuit, as one small type (convoy's pkg/circuit_breaker): whether a due
 * delivery may go now, and what an attempt's signal does to it. Pure; the in-process gate runs
 * it, and DestinationGate's Lua scripts store the same transitions (one spec table runs both).
 */
export const Circuit = {
  /** closed: go; probe: go, as the one probe of this interval (then `probing`); held: wait without an attempt. */
  admits(state: CircuitState, now: number): 'closed' | 'probe' | 'held' {
    if (state.openSince === null) return 'closed';
    return state.nextProbeAt !== null && state.nextProbeAt <= now ? 'probe' : 'held';
  },

  /** The circuit once a probe was let through: the next one waits a probe interval. */
  probing(state: CircuitState, rules: CircuitRules, now: number): CircuitState {
    return { ...state, nextProbeAt: now + rules.probeMs };
  },

  /**
   * A success closes it; a failure counts and opens it at `rules.failures` in a row. Open, a
   * failure moves nothing (the probe's own take moved nextProbeAt on); a failed probe is named
   * so its log line and the mirror say the circuit stays open.
   */
  after(
    state: CircuitState,
    signal: CircuitSignal,
    rules: CircuitRules,
    now: number,
    probe = false,
  ): { state: CircuitState; transition: CircuitTransition | null } {
    if (signal === 'none') return { state, transition: null };
    if (signal === 'success') return { state: CLOSED_CIRCUIT, transition: state.openSince === null ? null : 'closed' };
    const failures = state.failures + 1;
    if (state.openSince !== null) return { state: { ...state, failures }, transition: probe ? 'probe_failed' : null };
    if (failures >= rules.failures) return { state: { failures, openSince: now, nextProbeAt: now + rules.probeMs }, transition: 'opened' };
    return { state: { ...state, failures }, transition: null };
  },
};

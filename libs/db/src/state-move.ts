/**
 * A move of a state table (libs/orders owns the tables) as a conditional UPDATE takes it: the
 * states it starts from, the one it reaches, and the (from, order type) pairs it may match.
 */
export interface Move<State extends string> {
  from: State[];
  to: State;
  pairs: { from: State; orderType: number }[];
}

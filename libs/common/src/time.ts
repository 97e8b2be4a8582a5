/** Unix time in whole seconds (the contract's createtime, updatetime, timestamp): now, or of a Date. */
export function unixSeconds(at: Date | number = Date.now()): number {
  return Math.floor((typeof at === 'number' ? at : at.getTime()) / 1000);
}

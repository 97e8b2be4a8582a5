import { QueryFailedError, QueryRunnerProviderAlreadyReleasedError } from 'typeorm';
import { isDependencyDown } from './envelope-exception.filter';

describe('isDependencyDown', () => {
  it('recognises a database or Redis that went away, including mid-transaction', () => {
    const terminated = new QueryFailedError('SELECT 1', [], Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }));
    for (const err of [
      new QueryRunnerProviderAlreadyReleasedError(),
      terminated,
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      new Error("Stream isn't writeable and enableOfflineQueue options is false"),
      new Error('Connection terminated unexpectedly'),
    ]) {
      expect([err.message, isDependencyDown(err)]).toEqual([err.message, true]);
    }
  });

  it('leaves programming errors as 50000', () => {
    expect(isDependencyDown(new TypeError("Cannot read properties of undefined (reading 'x')"))).toBe(false);
    expect(isDependencyDown('text')).toBe(false);
  });
});

import { type ArgumentsHost, Logger } from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';
import { QueryFailedError, QueryRunnerProviderAlreadyReleasedError } from 'typeorm';
import { DomainError, ErrorCode } from '@app/common';
import { EnvelopeExceptionFilter, isDependencyDown } from './envelope-exception.filter';

describe('isDependencyDown', () => {
  it('recognises a database or Redis that went away, including mid-transaction', () => {
    const terminated = new QueryFailedError('SELECT 1', [], Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }));
    for (const err of [
      new QueryRunnerProviderAlreadyReleasedError(),
      terminated,
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      new Error("Stream isn't writeable and enableOfflineQueue options is false"),
      new Error("Cluster isn't ready and enableOfflineQueue options is false"),
      new Error('Failed to refresh slots cache.'),
      new Error('None of startup nodes is available'),
      new Error('CLUSTERDOWN The cluster is down'),
      new Error('LOADING Redis is loading the dataset in memory'),
      new Error("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."),
      new Error("READONLY You can't write against a read only replica."),
      new Error("OOM command not allowed when used memory > 'maxmemory'."),
      new Error('Connection terminated unexpectedly'),
    ]) {
      expect([err.message, isDependencyDown(err)]).toEqual([err.message, true]);
    }
  });

  it('answers a deadlock PostgreSQL broke, or a serialization failure, as retry later rather than 50000', () => {
    for (const code of ['40P01', '40001']) {
      const err = new QueryFailedError('INSERT INTO order_events ...', [], Object.assign(new Error('deadlock detected'), { code }));
      expect([code, isDependencyDown(err)]).toEqual([code, true]);
    }
  });

  it('answers a statement cancelled at statement_timeout as retry later', () => {
    const err = new QueryFailedError('SELECT ...', [], Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }));
    expect(isDependencyDown(err)).toBe(true);
  });

  it('recognises a socket error whatever realm made it (not an instanceof Error here), and one inside an AggregateError', () => {
    expect(isDependencyDown({ message: 'connect ECONNREFUSED 127.0.0.1:5432', code: 'ECONNREFUSED' })).toBe(true);
    expect(isDependencyDown({ message: '', errors: [{ message: 'connect ECONNREFUSED ::1:5432', code: 'ECONNREFUSED' }] })).toBe(true);
    expect(isDependencyDown(new Error('Client has encountered a connection error and is not queryable'))).toBe(true);
  });

  it('leaves programming errors as 50000', () => {
    expect(isDependencyDown(new TypeError("Cannot read properties of undefined (reading 'x')"))).toBe(false);
    expect(isDependencyDown('text')).toBe(false);
    // Redis refusing what we sent is ours to fix: a script error, a wrong type; and the words only count as a reply's first.
    expect(isDependencyDown(new Error('ERR Error running script (call to f_1234): @user_script:1: wrong number of arguments'))).toBe(false);
    expect(isDependencyDown(new Error('WRONGTYPE Operation against a key holding the wrong kind of value'))).toBe(false);
    expect(isDependencyDown(new Error('invalid amount: LOADING of the page failed'))).toBe(false);
  });
});

describe('EnvelopeExceptionFilter', () => {
  /** The filter's answer to `exception` for a request with these headers: status and the envelope's body. */
  function answer(exception: unknown, headers: Record<string, string>): { status: number; body: { code: number; msg: string; data: unknown } } {
    let status = 0;
    let sent = '';
    const reply = {
      sent: false,
      status: (s: number) => ((status = s), reply),
      header: () => reply,
      send: (body: string) => void (sent = body),
    };
    const request = { id: 'req-1', method: 'POST', url: '/api/merchant/getPayChannels', headers, routeOptions: {} };
    const host = { switchToHttp: () => ({ getRequest: () => request, getResponse: () => reply }) } as unknown as ArgumentsHost;
    new EnvelopeExceptionFilter({} as HttpAdapterHost).catch(exception, host);
    return { status, body: JSON.parse(sent) as { code: number; msg: string; data: unknown } };
  }

  it('answers a dependency that is down 50300, in Chinese when asked (SPEC 2), the same code and data', () => {
    const down = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' });
    jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const zh = answer(down, { 'accept-language': 'zh-CN,zh;q=0.9' });
    const en = answer(down, { 'accept-language': 'en' });
    expect([zh.status, zh.body.code, zh.body.msg, zh.body.data]).toEqual([503, 50300, '服务暂时不可用，请稍后重试', null]);
    expect([en.status, en.body.code, en.body.msg, en.body.data]).toEqual([503, 50300, 'Service temporarily unavailable', null]);
    expect(answer(new DomainError(ErrorCode.InsufficientBalance), {}).body.msg).toBe('Available balance too low');
  });
});

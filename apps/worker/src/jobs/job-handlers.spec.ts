import { MissingJobHandlerError, assertEveryJobHandled } from './job-handlers';

describe('assertEveryJobHandled', () => {
  const noop = async (): Promise<void> => undefined;

  it('accepts a handler for every job name', () => {
    expect(() =>
      assertEveryJobHandled({
        'callback.deliver': noop,
        'order.confirm': noop,
        'order.close': noop,
        'maintenance.sweep': noop,
        'order.payout': noop,
        'refund.process': noop,
        'recon.daily': noop,
      }),
    ).not.toThrow();
  });

  it('refuses to start when a job name has no handler', () => {
    expect(() => assertEveryJobHandled({ 'order.confirm': noop, 'order.payout': noop })).toThrow(MissingJobHandlerError);
    expect(() => assertEveryJobHandled({})).toThrow(
      /'callback.deliver', 'order.confirm', 'order.close', 'maintenance.sweep', 'order.payout', 'refund.process', 'recon.daily'/,
    );
  });
});

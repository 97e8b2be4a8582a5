/** Compose and Kubernetes send SIGTERM, a terminal's Ctrl-C SIGINT, closing the terminal SIGHUP. */
export const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];

export interface StopOptions {
  /** Past this, the process exits 1 whatever is still running. */
  deadlineMs: number;
  /** The one line said when the stop fails or outlives its deadline. */
  report: (line: string) => void;
}

/**
 * Runs `stop` once on the first stop signal, then exits 0 (1 when it failed or outlived the
 * deadline). Signals repeated meanwhile change nothing: npm forwards Ctrl-C to the app the
 * terminal already sent it to. Exiting ourselves rather than re-raising the signal matters:
 * as PID 1 in a container a re-raised SIGTERM is ignored and the stop hangs until SIGKILL.
 */
export function stopOnSignals(stop: (signal: NodeJS.Signals) => Promise<void>, options: StopOptions): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => {
      options.report(`${signal}: still stopping after ${options.deadlineMs / 1000} s, exiting now`);
      process.exit(1);
    }, options.deadlineMs).unref();
    stop(signal).then(
      () => process.exit(0),
      (err: unknown) => {
        options.report(`${signal}: stop failed: ${err instanceof Error ? err.message : String(err)}`);
        process.exit(1);
      },
    );
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
}

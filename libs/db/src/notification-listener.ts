import { Client } from 'pg';

export interface NotificationHandlers {
  /** A NOTIFY on the channel; payload '' when none was given. */
  notification(payload: string): void;
  /** LISTEN is in place (at start, and again after every reconnect). */
  listening(): void;
  /** The connection is gone: notifications sent from now until `listening` are lost. */
  lost(reason: Error): void;
}

export interface NotificationListenerTimings {
  /** Pause before reconnecting after the connection was lost. */
  reconnectMs: number;
  /** How often the connection is checked with a query, so a silently dead socket is noticed. */
  pingMs: number;
  /** A check slower than this counts as a lost connection. */
  pingTimeoutMs: number;
}

const DEFAULT_TIMINGS: NotificationListenerTimings = { reconnectMs: 1000, pingMs: 5000, pingTimeoutMs: 2000 };

/**
 * One PostgreSQL connection of its own that LISTENs on a channel, reconnecting forever until
 * stopped, and says when it is listening and when it lost the connection: a consumer that caches
 * what the notifications invalidate must stop trusting its cache while the listener is down.
 */
export class NotificationListener {
  private client: Client | null = null;
  private isListening = false;
  private stopped = false;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private pingTimer: NodeJS.Timeout | null = null;
  /** The client a check is running on, until it answers or times out. */
  private pinging: Client | null = null;
  private readonly timings: NotificationListenerTimings;

  constructor(
    private readonly databaseUrl: string,
    private readonly channel: string,
    private readonly handlers: NotificationHandlers,
    timings: Partial<NotificationListenerTimings> = {},
  ) {
    if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`not a plain channel name: ${channel}`);
    this.timings = { ...DEFAULT_TIMINGS, ...timings };
  }

  get listening(): boolean {
    return this.isListening;
  }

  /** Resolves after the first attempt, listening or not: a failed attempt keeps retrying in the background. */
  async start(): Promise<void> {
    this.stopped = false;
    this.pingTimer = setInterval(() => this.ping(), this.timings.pingMs);
    this.pingTimer.unref();
    await this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.reconnectTimer = this.pingTimer = null;
    const client = this.client;
    this.client = null;
    this.isListening = false;
    if (client) await client.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    this.reconnectTimer = null;
    if (this.stopped) return;
    const client = new Client({
      connectionString: this.databaseUrl,
      application_name: `listen:${this.channel}`,
      keepAlive: true,
      connectionTimeoutMillis: this.timings.pingTimeoutMs + 3000,
    });
    this.client = client;
    client.on('error', (err) => this.drop(client, err));
    client.on('end', () => this.drop(client, new Error('connection closed')));
    client.on('notification', (message) => {
      if (this.client === client && message.channel === this.channel) this.handlers.notification(message.payload ?? '');
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${this.channel}`);
    } catch (err) {
      this.drop(client, err as Error);
      return;
    }
    if (this.client !== client) return;
    this.isListening = true;
    this.handlers.listening();
  }

  private drop(client: Client, reason: Error): void {
    if (this.client !== client) return;
    this.client = null;
    this.isListening = false;
    // A dead connection may still report errors; they are this one's, and it is gone.
    client.removeAllListeners('error');
    client.on('error', () => undefined);
    void client.end().catch(() => undefined);
    if (this.stopped) return;
    this.handlers.lost(reason);
    this.reconnectTimer = setTimeout(() => void this.connect(), this.timings.reconnectMs);
    this.reconnectTimer.unref();
  }

  private ping(): void {
    const client = this.client;
    // One check at a time: a second query on a client still running the first is deprecated in pg 8 and an error in pg 9.
    if (!client || !this.isListening || this.pinging === client) return;
    this.pinging = client;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer to a check within ${this.timings.pingTimeoutMs} ms`)), this.timings.pingTimeoutMs);
    });
    Promise.race([client.query('SELECT 1'), timeout])
      .catch((err: Error) => this.drop(client, err))
      .finally(() => {
        clearTimeout(timer);
        if (this.pinging === client) this.pinging = null;
      });
  }
}

import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ChannelError } from './channel-adapter';
import { channelDownload } from './channel-http';

describe('channelDownload', () => {
  let server: Server;
  let url: string;
  let answerAfterMs = 0;

  beforeAll(async () => {
    server = createServer((_req, res) => {
      const timer = setTimeout(() => res.end('bill'), answerAfterMs);
      res.on('close', () => clearTimeout(timer));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/bill?token=secret`;
  });
  afterAll(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });

  it("a link that expires (alipay's bill): an answer that has not begun by then is given up, with no URL in the error", async () => {
    answerAfterMs = 2000;
    const error = await channelDownload(url, {}, undefined, AbortSignal.timeout(10_000), Date.now() + 100).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ChannelError);
    expect((error as Error).message).toBe("channel bill download did not answer within the link's lifetime");
    answerAfterMs = 0;
    expect((await channelDownload(url, {}, undefined, AbortSignal.timeout(10_000), Date.now() + 5000)).body.toString()).toBe('bill');
  });
});

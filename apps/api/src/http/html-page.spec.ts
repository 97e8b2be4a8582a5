import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { HtmlPage, registerHtmlPageHeaders } from './html-page';

// What another HTML module (the portal) does: opt its routes in, one widening the policy.
@Controller('pages')
class PagesController {
  @Get('plain')
  @HtmlPage()
  plain(): string {
    return '<p>plain</p>';
  }

  @Get('scripted')
  @HtmlPage({ scriptSrc: ["'self'"] })
  scripted(): string {
    return '<script src="/app.js"></script>';
  }

  @Get('json')
  json(): object {
    return { ok: true };
  }
}

@Module({ controllers: [PagesController] })
class PagesModule {}

describe('HtmlPage', () => {
  let app: NestFastifyApplication;

  beforeAll(async () => {
    app = await NestFactory.create<NestFastifyApplication>(PagesModule, new FastifyAdapter(), { logger: false });
    await registerHtmlPageHeaders(app);
    await app.init();
  });
  afterAll(() => app.close());

  const get = (url: string) => app.inject({ method: 'GET', url });

  it('gives an opted-in route the page headers: CSP with frame-ancestors none, DENY, nosniff, no-referrer', async () => {
    const res = await get('/pages/plain');
    expect(res.headers['content-security-policy']).toBe(
      "default-src 'none';style-src 'unsafe-inline';form-action 'self';frame-ancestors 'none';base-uri 'none'",
    );
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['strict-transport-security']).toBeUndefined();
  });

  it('lets a page add directives while keeping the rest of the policy', async () => {
    const csp = String((await get('/pages/scripted')).headers['content-security-policy']);
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("default-src 'none'");
  });

  it('leaves routes that did not opt in alone', async () => {
    const res = await get('/pages/json');
    expect(res.headers['content-security-policy']).toBeUndefined();
    expect(res.headers['x-frame-options']).toBeUndefined();
  });
});

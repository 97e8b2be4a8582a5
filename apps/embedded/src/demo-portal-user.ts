import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NestFactory } from '@nestjs/core';
import type { AppConfig } from '@app/common';
import { MerchantRepository } from '@app/db';
import { type Invitation, OperatorModule, PortalAccessService } from '@app/operator';

export const DEMO_PORTAL_EMAIL = 'demo@example.com';

/**
 * The banner's portal line: the demo user's invitation link until a password is set (a fresh
 * one when the saved link expired), then where to sign in. The link is kept beside the demo
 * merchant's credentials, since the database holds only its hash.
 */
export async function demoPortalLine(config: AppConfig, dataDir: string, demoApiKey: string): Promise<string> {
  const file = join(dataDir, 'demo-portal-invitation.json');
  const ctx = await NestFactory.createApplicationContext(OperatorModule.forRoot(config), { logger: ['error'] });
  try {
    const portalAccess = ctx.get(PortalAccessService);
    if (await portalAccess.hasUser(DEMO_PORTAL_EMAIL)) return `${config.publicBaseUrl}/portal/login  (${DEMO_PORTAL_EMAIL} with the password you set)`;
    const saved = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Invitation) : null;
    if (saved && Date.parse(saved.expires_at) > Date.now() + 60_000) return `${saved.invitation_url}  (${DEMO_PORTAL_EMAIL}: set a password)`;
    const merchant = await ctx.get(MerchantRepository).findByApiKey(demoApiKey);
    if (!merchant) return 'no demo merchant found';
    const invitation = await portalAccess.invite(merchant.id, DEMO_PORTAL_EMAIL);
    writeFileSync(file, JSON.stringify(invitation, null, 2), { mode: 0o600 });
    return `${invitation.invitation_url}  (${DEMO_PORTAL_EMAIL}: set a password)`;
  } finally {
    await ctx.close();
  }
}

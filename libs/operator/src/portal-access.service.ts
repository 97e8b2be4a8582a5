import { Injectable } from '@nestjs/common';
import { AppConfig, isEmailAddress } from '@app/common';
import { MerchantRepository, MerchantUserRepository } from '@app/db';
import { newInvitationToken } from './credentials';
import { OperatorError } from './operator-error';
import { OperatorInputError } from './operator-input-error';

/** SPEC 8a: an invitation link works for 24 hours, once. */
export const INVITATION_TTL_SECONDS = 24 * 3600;

export interface Invitation {
  merchant_id: number;
  email: string;
  invitation_url: string;
  expires_at: string;
}

/** Who may sign in to a merchant's portal: invitations, and the operator's disabling of a user (SPEC 8a). */
@Injectable()
export class PortalAccessService {
  constructor(
    private readonly merchants: MerchantRepository,
    private readonly users: MerchantUserRepository,
    private readonly config: AppConfig,
  ) {}

  /**
   * A link where the person sets a password and becomes a portal user of the merchant. For an
   * existing user of the same merchant it is a password reset (and re-enables a disabled user).
   */
  async invite(merchantId: number, email: string): Promise<Invitation> {
    if (!isEmailAddress(email)) throw new OperatorInputError('email', 'must be an email address of at most 254 characters');
    if (!(await this.merchants.findById(merchantId))) throw new OperatorError(`no merchant ${merchantId}`);
    const existing = await this.users.findByEmail(email);
    if (existing && existing.merchantId !== merchantId) throw new OperatorError(`${email} is already a user of another merchant`);
    const token = newInvitationToken();
    const expiresAt = await this.users.createInvitation(merchantId, existing?.email ?? email, token, INVITATION_TTL_SECONDS);
    return {
      merchant_id: merchantId,
      email: existing?.email ?? email,
      invitation_url: `${this.config.publicBaseUrl}/portal/invite/${token}`,
      expires_at: expiresAt.toISOString(),
    };
  }

  /** Disables the portal user: every session of it ends at once, and its pending invitations stop working. */
  async disable(email: string): Promise<{ email: string; status: 'disabled'; sessions_ended: number; invitations_revoked: number }> {
    const result = await this.users.disableByEmail(email);
    if (!result.userFound && result.invitationsRevoked === 0) throw new OperatorError(`no portal user or pending invitation for ${email}`);
    return { email, status: 'disabled', sessions_ended: result.sessionsEnded, invitations_revoked: result.invitationsRevoked };
  }

  /** Whether the email has set a password (accepted an invitation): for the embedded demo's banner. */
  async hasUser(email: string): Promise<boolean> {
    return (await this.users.findByEmail(email)) !== null;
  }
}

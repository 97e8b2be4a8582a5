import { Injectable } from '@nestjs/common';
import { MerchantUserRepository, type PendingInvitation, SignInThrottleRepository, type ThrottleRule } from '@app/db';
import { type PasswordProblem, hashPassword, passwordProblem, verifyAgainstDummy, verifyPassword } from './passwords';

/** SPEC 8a: 5 failed sign-ins for an email within 15 minutes lock it for 15 minutes. */
export const SIGN_IN_THROTTLE: ThrottleRule = { maxFailures: 5, windowSeconds: 15 * 60, lockSeconds: 15 * 60 };

export type SignInResult = { ok: true; userId: number } | { ok: false; reason: 'login.failed' | 'login.locked' };
export type InvitationResult = { ok: true; userId: number } | { ok: false; problem: PasswordProblem | 'invite.invalid' | 'invite.emailTaken' };
export type PasswordChangeResult = { ok: true } | { ok: false; problem: PasswordProblem | 'password.wrongCurrent' | 'login.locked' };

/**
 * Who may sign in. An unknown email, a wrong password and a disabled user take the same path
 * (an argon2 verification, a counted failure, the same answer), so answers never tell them apart.
 */
@Injectable()
export class PortalAuthService {
  constructor(
    private readonly users: MerchantUserRepository,
    private readonly throttle: SignInThrottleRepository,
  ) {}

  async signIn(email: string, password: string): Promise<SignInResult> {
    const outcome = await this.checkCounted(email, async () => {
      const user = await this.users.findByEmail(email);
      if (!user) {
        await verifyAgainstDummy(password);
        return null;
      }
      return (await verifyPassword(user.passwordHash, password)) && user.status === 'active' ? user.id : null;
    });
    if (outcome === 'locked') return { ok: false, reason: 'login.locked' };
    return outcome === 'wrong' ? { ok: false, reason: 'login.failed' } : { ok: true, userId: outcome.value };
  }

  /**
   * Runs one password check under the email's lockout: the attempt is counted first (so
   * concurrent attempts cannot outrun the count), the check runs only if the count allows it,
   * and the failure that reaches the limit locks the email. `check` answers null for a wrong password.
   */
  private async checkCounted<T>(email: string, check: () => Promise<T | null>): Promise<{ value: T } | 'wrong' | 'locked'> {
    const attempt = await this.throttle.countAttempt(email, SIGN_IN_THROTTLE);
    if (attempt === null) return 'locked';
    const value = await check();
    if (value !== null) {
      await this.throttle.clearFailures(email);
      return { value };
    }
    if (attempt < SIGN_IN_THROTTLE.maxFailures) return 'wrong';
    await this.throttle.lock(email, SIGN_IN_THROTTLE);
    return 'locked';
  }

  findInvitation(token: string): Promise<PendingInvitation | null> {
    return this.users.findPendingInvitation(token);
  }

  async acceptInvitation(token: string, password: string, repeated: string): Promise<InvitationResult> {
    const problem = passwordProblem(password, repeated);
    if (problem) return { ok: false, problem };
    const result = await this.users.acceptInvitation(token, await hashPassword(password));
    if (result.kind === 'accepted') return { ok: true, userId: result.userId };
    return { ok: false, problem: result.kind === 'invalid' ? 'invite.invalid' : 'invite.emailTaken' };
  }

  /** Checks the current password the way sign-in does (wrong guesses count toward the lock). */
  async changePassword(userId: number, current: string, next: string, repeated: string): Promise<PasswordChangeResult> {
    const confirmed = await this.confirmPassword(userId, current);
    if (confirmed !== 'ok') return { ok: false, problem: confirmed === 'locked' ? 'login.locked' : 'password.wrongCurrent' };
    const problem = passwordProblem(next, repeated);
    if (problem) return { ok: false, problem };
    await this.users.setPasswordHash(userId, await hashPassword(next));
    return { ok: true };
  }

  /** The signed-in user's password asked again before a step a stolen session must not take; counted like sign-in. */
  async confirmPassword(userId: number, password: string): Promise<'ok' | 'wrong' | 'locked'> {
    const user = await this.users.findById(userId);
    if (!user) return 'wrong';
    const outcome = await this.checkCounted(user.email, async () => ((await verifyPassword(user.passwordHash, password)) ? true : null));
    return typeof outcome === 'string' ? outcome : 'ok';
  }
}

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
    if (await this.throttle.isLocked(email)) return { ok: false, reason: 'login.locked' };
    const user = await this.users.findByEmail(email);
    let valid = false;
    if (user) valid = (await verifyPassword(user.passwordHash, password)) && user.status === 'active';
    else await verifyAgainstDummy(password);
    if (valid && user) {
      await this.throttle.clearFailures(email);
      return { ok: true, userId: user.id };
    }
    const locked = await this.throttle.recordFailure(email, SIGN_IN_THROTTLE);
    return { ok: false, reason: locked ? 'login.locked' : 'login.failed' };
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
    const user = await this.users.findById(userId);
    if (!user) return { ok: false, problem: 'password.wrongCurrent' };
    if (await this.throttle.isLocked(user.email)) return { ok: false, problem: 'login.locked' };
    if (!(await verifyPassword(user.passwordHash, current))) {
      const locked = await this.throttle.recordFailure(user.email, SIGN_IN_THROTTLE);
      return { ok: false, problem: locked ? 'login.locked' : 'password.wrongCurrent' };
    }
    const problem = passwordProblem(next, repeated);
    if (problem) return { ok: false, problem };
    await this.users.setPasswordHash(userId, await hashPassword(next));
    return { ok: true };
  }
}

/** balanceQuery takes nothing but the common authentication parameters. */
export class BalanceQueryDto {}

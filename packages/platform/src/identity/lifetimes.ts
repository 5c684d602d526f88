/** Every lifetime of the identity feature, from spec section 8, in one place. */
export const LIFETIMES = {
  /** An emailed sign-in or confirmation link. */
  linkMs: 15 * 60 * 1000,
  /**
   * An agent onboarding's emailed link (spec 5.3): the owner has the whole 24-hour
   * confirmation deadline to open it; still single-use and scanner-safe.
   */
  onboardingLinkMs: 24 * 60 * 60 * 1000,
  /** The review page's preview cookie that a confirmation must carry. */
  previewMs: 10 * 60 * 1000,
  /** A confirmed browser session, central and brokered: fixed, never extended. */
  sessionMs: 30 * 24 * 60 * 60 * 1000,
  /** An access token. */
  accessMs: 60 * 60 * 1000,
  /** Access tokens are refreshed during their final minute. */
  refreshWindowMs: 60 * 1000,
  /**
   * A sign-in started on an app origin: its state cookie there, which the callback needs.
   * Long enough for an email link to be opened (15 minutes) and approved.
   */
  signInStateMs: 60 * 60 * 1000,
  /** An authorization code that carries a central session to an app origin. */
  codeMs: 60 * 1000,
  /** Password registration must be confirmed within this. */
  confirmationMs: 24 * 60 * 60 * 1000,
} as const

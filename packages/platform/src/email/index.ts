/**
 * The email feature's public surface: the mailer other features send through, the
 * development mailbox readers (tests use `latestDevMailTo` to follow a sign-in link), and
 * the `/_dev/mail` routes.
 */
export { createMailer, type Mailer, type MailerDeps, type OutboundMessage } from './mailer.ts'
export {
  DEV_MAIL_DEFAULT_LIMIT,
  DEV_MAIL_MAX_LIMIT,
  latestDevMailTo,
  listDevMail,
  type DevMail,
} from './dev-mailbox.ts'
export { devMailRoutes } from './routes.ts'
export { emailDeliveryFailed } from './errors.ts'

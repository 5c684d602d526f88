/**
 * Errors of the email feature. Delivery failures (SMTP unreachable, refused, timed out) are
 * ServiceErrors with code EMAIL_DELIVERY_FAILED (502: the upstream mail server failed, not
 * us); the original failure is kept as `cause`.
 */
import { ServiceError } from '../lib/errors.ts'

export function emailDeliveryFailed(message: string, options: { cause?: unknown } = {}): ServiceError {
  return new ServiceError('EMAIL_DELIVERY_FAILED', message, options.cause === undefined ? {} : { cause: options.cause })
}

// The naming rules of service.yaml in one place: each pattern with the words used to
// explain it when a name does not match. Patterns carry their own length limits.

import type { StringRule } from './read-fields.ts'

/** `app.id`: 3-40 characters, lowercase letters, digits and single hyphens. */
export const APP_SLUG = {
  pattern: /^(?!.*--)[a-z][a-z0-9-]{1,38}[a-z0-9]$/,
  format: 'an app id is 3 to 40 characters: a lowercase letter first, then lowercase letters, digits or single "-", ending in a letter or digit',
} as const satisfies StringRule

export const FUNCTION_NAME = {
  pattern: /^[A-Za-z][A-Za-z0-9_-]{0,63}$/,
  format: 'a Function name starts with a letter and has at most 64 letters, digits, "_" or "-"',
} as const satisfies StringRule

/** Queue and cron names. */
export const JOB_NAME = {
  pattern: /^[a-z][a-z0-9_-]{0,63}$/,
  format: 'a name starts with a lowercase letter and has at most 64 lowercase letters, digits, "_" or "-"',
} as const satisfies StringRule

/** Secret names, credential names and the OAuth access-token name. */
export const SECRET_NAME = {
  pattern: /^[A-Z][A-Z0-9_]{0,63}$/,
  format: 'a secret name starts with an uppercase letter and has at most 64 uppercase letters, digits or "_"',
} as const satisfies StringRule

/** Search names and consumer slot names. */
export const LOWER_SNAKE_NAME = {
  pattern: /^[a-z][a-z0-9_]{0,63}$/,
  format: 'a name starts with a lowercase letter and has at most 64 lowercase letters, digits or "_"',
} as const satisfies StringRule

/** Table and column names as the data API exposes them (unquoted PostgreSQL identifiers). */
export const SQL_IDENTIFIER = {
  pattern: /^[a-z_][a-z0-9_]{0,62}$/,
  format: 'a SQL identifier starts with a lowercase letter or "_" and has at most 63 lowercase letters, digits or "_"',
} as const satisfies StringRule

/** Published integration names, in provides and in consumer slots. */
export const INTEGRATION_NAME = {
  pattern: /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/,
  format: 'an integration name is lowercase kebab-case such as "acme-crm"',
  maxLength: 64,
} as const satisfies StringRule

/** Capability names such as "contacts" or "contacts.read". */
export const CAPABILITY_NAME = {
  pattern: /^[a-z][a-zA-Z0-9]*(\.[a-z][a-zA-Z0-9]*)*$/,
  format: 'a capability name is camelCase words joined by ".", such as "contacts.read"',
} as const satisfies StringRule

/** Operation names: two or more dotted camelCase segments such as "orders.list". */
export const OPERATION_NAME = {
  pattern: /^[a-z][a-zA-Z0-9]*(\.[a-z][a-zA-Z0-9]*)+$/,
  format: 'an operation name is two or more camelCase words joined by ".", such as "orders.list"',
} as const satisfies StringRule

/** Integration event types such as "contact.created". */
export const EVENT_TYPE = {
  pattern: /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/,
  format: 'an event type is two or more lowercase words joined by ".", such as "contact.created"',
} as const satisfies StringRule

/** Email aliases: the local part of `<alias>@<app slug>.<EMAIL_DOMAIN>` (no "+", which starts a tag). */
export const EMAIL_ALIAS = {
  pattern: /^[a-z0-9]+([._-][a-z0-9]+)*$/,
  format: 'an email alias is lowercase letters and digits, words joined by single ".", "_" or "-" (such as "support" or "no-reply")',
  maxLength: 64,
} as const satisfies StringRule

/** A provider's model name, as `ai.textModel` and `ai.imageModel` name it (config.ts checks AI_*_MODELS alike). */
export const AI_MODEL = {
  pattern: /^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$/,
  format: 'a model name is letters, digits and . _ : / @ + - (such as "gpt-4o-mini" or "llama3.1:8b")',
  maxLength: 200,
} as const satisfies StringRule

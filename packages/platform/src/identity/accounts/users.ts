/**
 * Organisations (companies) and users: the minimum the control plane needs. Each account
 * belongs to exactly one company; nothing here ever moves an account between companies.
 * Sign-in flows come with the identity feature.
 */
import { first, type Queryable } from '../../db/db.ts'
import { ServiceError } from '../../lib/errors.ts'

export interface User {
  id: string
  /** Null until the person sets up a company or accepts an invitation. */
  organisationId: string | null
  email: string
  displayName: string | null
  organisationRole: 'member' | 'admin'
  isPlatformAdmin: boolean
  emailConfirmedAt: Date | null
  /** For unconfirmed accounts: when their apps pause unless the email is confirmed. */
  confirmationDeadline: Date | null
  pausedAt: Date | null
}

interface UserRow extends Record<string, unknown> {
  id: string
  organisation_id: string | null
  email: string
  display_name: string | null
  organisation_role: 'member' | 'admin'
  is_platform_admin: boolean
  email_confirmed_at: Date | null
  confirmation_deadline: Date | null
  paused_at: Date | null
}

const USER_COLUMNS = `id, organisation_id, email, display_name, organisation_role, is_platform_admin,
  email_confirmed_at, confirmation_deadline, paused_at`

export function userFromRow(row: UserRow): User {
  return {
    id: row.id,
    organisationId: row.organisation_id,
    email: row.email,
    displayName: row.display_name,
    organisationRole: row.organisation_role,
    isPlatformAdmin: row.is_platform_admin,
    emailConfirmedAt: row.email_confirmed_at,
    confirmationDeadline: row.confirmation_deadline ?? null,
    pausedAt: row.paused_at ?? null,
  }
}

const EMAIL = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+$/

/** Lower-cases and checks an email address; throws VALIDATION_FAILED when it is not one. */
export function normaliseEmail(raw: unknown): string {
  const email = typeof raw === 'string' ? raw.trim().toLowerCase() : ''
  if (email.length < 3 || email.length > 254 || !EMAIL.test(email)) {
    throw new ServiceError('VALIDATION_FAILED', 'email must be an email address such as ana@example.com', {
      details: { field: 'email' },
    })
  }
  return email
}

export async function findUserByEmail(db: Queryable, email: string): Promise<User | null> {
  const row = await first<UserRow>(db, `select ${USER_COLUMNS} from platform.users where email = $1`, [email])
  return row ? userFromRow(row) : null
}

export async function findUserById(db: Queryable, id: string): Promise<User | null> {
  const row = await first<UserRow>(db, `select ${USER_COLUMNS} from platform.users where id = $1`, [id])
  return row ? userFromRow(row) : null
}

/** The organisation with this exact name, created when there is none. */
export async function ensureOrganisation(db: Queryable, name: string): Promise<{ id: string; name: string; created: boolean }> {
  const trimmed = name.trim()
  if (trimmed.length < 1 || trimmed.length > 120) {
    throw new ServiceError('VALIDATION_FAILED', 'company must be 1 to 120 characters', { details: { field: 'company' } })
  }
  const existing = await first<{ id: string; name: string }>(
    db, 'select id, name from platform.organisations where name = $1 order by created_at limit 1', [trimmed])
  if (existing) return { ...existing, created: false }
  const [row] = await db.query<{ id: string; name: string }>(
    'insert into platform.organisations (name) values ($1) returning id, name', [trimmed])
  return { ...row!, created: true }
}

export interface CreateUserInput {
  email: string
  organisationId: string | null
  organisationRole?: 'member' | 'admin'
  isPlatformAdmin?: boolean
  displayName?: string | null
  /** Operator-created accounts are confirmed; self-registered ones are not. */
  confirmedAt?: Date | null
  confirmationDeadline?: Date | null
  passwordHash?: string | null
}

export async function createUser(db: Queryable, input: CreateUserInput): Promise<User> {
  const email = normaliseEmail(input.email)
  if (await findUserByEmail(db, email)) {
    throw new ServiceError('USER_EXISTS', `an account for ${email} already exists`)
  }
  const [row] = await db.query<UserRow>(
    `insert into platform.users (organisation_id, email, display_name, organisation_role, is_platform_admin,
       email_confirmed_at, confirmation_deadline, password_hash)
     values ($1, $2, $3, $4, $5, $6, $7, $8) returning ${USER_COLUMNS}`,
    [input.organisationId, email, input.displayName ?? null, input.organisationRole ?? 'member',
      input.isPlatformAdmin ?? false, input.confirmedAt ?? null, input.confirmationDeadline ?? null,
      input.passwordHash ?? null],
  )
  return userFromRow(row!)
}

/**
 * Passwords: the length rule (8 to 72 characters), hashing with argon2id and verifying
 * against the stored verifier. Only the verifier (a PHC string such as
 * `$argon2id$v=19$m=19456,t=2,p=1$salt$hash`) is ever stored; the password itself is never
 * logged, stored or returned. Verifying takes the same work whether or not the account
 * has a password, so the response time does not say which accounts exist.
 */
import { hash, parseOptions, verify, type Algorithm } from '@node-rs/argon2'
import { randomBytes } from 'node:crypto'
import { first, type Queryable } from '../../db/db.ts'
import { ServiceError } from '../../lib/errors.ts'

export const PASSWORD_MIN = 8
export const PASSWORD_MAX = 72

/**
 * `Algorithm` is an ambient const enum, which `verbatimModuleSyntax` cannot read as a value;
 * the annotation still makes the compiler check that 2 is argon2id.
 */
const ARGON2ID: Algorithm.Argon2id = 2

/**
 * OWASP Password Storage Cheat Sheet, argon2id minimum: 19 MiB of memory, 2 passes, 1 lane.
 * That costs roughly 10-30 ms and 19 MiB per attempt here, which keeps sign-in responsive
 * and bounds memory under a burst of attempts (rate limiting bounds the burst), while
 * making each offline guess against a leaked verifier cost the attacker the same memory.
 */
const HASH_OPTIONS = {
  algorithm: ARGON2ID,
  memoryCost: 19_456,
  timeCost: 2,
  parallelism: 1,
} as const

/**
 * The most a stored verifier may ask of us. argon2 reads its cost from the verifier, so a
 * corrupted or planted verifier with m=999999999 would try to allocate ~1 TB and take the
 * process down; anything beyond these ceilings (room to raise HASH_OPTIONS later) is treated
 * as malformed.
 */
const VERIFIER_CEILING = { memoryCost: 262_144, timeCost: 16, parallelism: 8 } as const

/**
 * Returns the password when it has 8 to 72 characters, counted as Unicode code points (an
 * emoji is one character, as a person counts it), or throws VALIDATION_FAILED.
 *
 * @example
 * const password = checkPassword(body.password) // throws for 'short'
 */
export function checkPassword(password: unknown): string {
  if (typeof password !== 'string') {
    throw new ServiceError('VALIDATION_FAILED', 'password must be a string of 8 to 72 characters', {
      details: { field: 'password' },
    })
  }
  const length = [...password].length
  if (length < PASSWORD_MIN || length > PASSWORD_MAX) {
    throw new ServiceError(
      'VALIDATION_FAILED',
      `a password has ${PASSWORD_MIN} to ${PASSWORD_MAX} characters; this one has ${length}`,
      { details: { field: 'password' } },
    )
  }
  return password
}

/**
 * Hashes a password with argon2id and a fresh random salt; returns the PHC string to store.
 * Checks the length rule first, so an invalid password is never stored.
 *
 * @example
 * const verifier = await hashPassword(checkPassword(body.password))
 */
export async function hashPassword(password: string): Promise<string> {
  return hash(checkPassword(password), HASH_OPTIONS)
}

let dummyVerifierPromise: Promise<string> | undefined

/**
 * The argon2id verifier of a random password nobody knows, computed once on first use with
 * the same parameters as real verifiers, so checking against it costs what a real check
 * costs. Exported for tests; not part of the identity feature's surface.
 */
export function dummyVerifier(): Promise<string> {
  dummyVerifierPromise ??= hash(randomBytes(32).toString('base64url'), HASH_OPTIONS)
  return dummyVerifierPromise
}

/** True when the verifier is an argon2id PHC string whose cost we are willing to pay. */
function isUsableVerifier(verifier: string): boolean {
  let options: ReturnType<typeof parseOptions>
  try {
    options = parseOptions(verifier)
  } catch {
    // parseOptions throws exactly when argon2 would refuse the verifier: not a PHC string,
    // salt or output too short, cost below argon2's minimum. That is the malformed case.
    return false
  }
  return (
    options.algorithm === ARGON2ID &&
    options.memoryCost <= VERIFIER_CEILING.memoryCost &&
    options.timeCost <= VERIFIER_CEILING.timeCost &&
    options.parallelism <= VERIFIER_CEILING.parallelism
  )
}

/**
 * Whether `password` matches `verifier`. The comparison is argon2's own, constant-time by
 * construction. When there is no usable verifier (unknown account, no password set, or a
 * malformed verifier) it still verifies against a dummy hash and answers false, so the
 * time taken does not reveal which case applies. Never throws for a wrong password.
 *
 * @example
 * const user = await findUserByEmail(email) // may be undefined
 * if (!(await verifyPassword(user?.passwordHash ?? null, password))) throw invalidCredentials()
 */
export async function verifyPassword(verifier: string | null, password: string): Promise<boolean> {
  if (verifier === null || !isUsableVerifier(verifier)) {
    await verify(await dummyVerifier(), password)
    return false
  }
  return verify(verifier, password)
}

/** The stored verifier of a person's password, null when they have none. */
export async function readPasswordVerifier(db: Queryable, userId: string): Promise<string | null> {
  const row = await first<{ password_hash: string | null }>(db, 'select password_hash from platform.users where id = $1', [userId])
  return row?.password_hash ?? null
}

/** Sets or replaces a person's password verifier (email-link sign-in stays open to them). */
export async function storePasswordVerifier(db: Queryable, input: { userId: string; verifier: string }): Promise<void> {
  await db.query('update platform.users set password_hash = $2 where id = $1', [input.userId, input.verifier])
}

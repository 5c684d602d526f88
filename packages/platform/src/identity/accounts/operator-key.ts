/**
 * The operator key: the credential of the person who runs the platform (creates users and
 * their first owner tokens). SERVICE_OPERATOR_KEY when set; otherwise a key generated once
 * into `<data dir>/operator-key`, readable by the operator's account only (0600).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { newSecret } from '../../lib/crypto.ts'

export const OPERATOR_KEY_PREFIX = 'svc_operator_'

export function operatorKeyPath(dataDir: string): string {
  return join(dataDir, 'operator-key')
}

export function ensureOperatorKey(config: { dataDir: string; operatorKey?: string | null }): { value: string; source: string } {
  if (config.operatorKey) return { value: config.operatorKey, source: 'SERVICE_OPERATOR_KEY' }
  const path = operatorKeyPath(config.dataDir)
  if (existsSync(path)) return { value: readFileSync(path, 'utf8').trim(), source: path }
  mkdirSync(config.dataDir, { recursive: true })
  const value = newSecret(OPERATOR_KEY_PREFIX)
  writeFileSync(path, value + '\n', { mode: 0o600, flag: 'wx' })
  chmodSync(path, 0o600)
  return { value, source: path }
}

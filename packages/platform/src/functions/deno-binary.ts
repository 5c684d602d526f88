/**
 * Adapter (Node): where the Deno executable is. The `deno` npm package ships the binary
 * as `deno` beside its package.json (its postinstall links the platform package's binary
 * there; `node_modules/.bin/deno` is a symlink to the same file). The package's `bin.cjs`
 * is a Node wrapper that spawns that binary, so using it would cost a Node process per
 * worker; we run the binary itself.
 */
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

/**
 * The absolute path of the Deno binary from the workspace's `deno` npm package.
 *
 * @example
 * spawn(resolveDenoBinary(), ['--version'])
 */
export function resolveDenoBinary(): string {
  const require = createRequire(import.meta.url)
  const packageDirectory = dirname(require.resolve('deno/package.json'))
  const binary = join(packageDirectory, process.platform === 'win32' ? 'deno.exe' : 'deno')
  if (existsSync(binary)) return binary
  // The postinstall could not link the binary (a read-only install): ask the package
  // where its platform-specific binary is, as its own bin.cjs does.
  const installer = require('deno/install_api.cjs') as { runInstall(): string }
  return installer.runInstall()
}

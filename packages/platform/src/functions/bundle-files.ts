/**
 * Materialises a release's bundle (stored in `platform.release_files`) as regular files
 * under `<bundlesDir>/<releaseId>/`, the directory a Functions pool runs in. A release's
 * files never change, so the directory is written once: into a temporary directory beside
 * it, then renamed into place, so a reader never sees half a bundle and two writers racing
 * leave one complete copy.
 */
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises'
import { dirname, join, resolve, sep } from 'node:path'
import type { Queryable } from '../db/db.ts'

const RELEASE_ID = /^[0-9a-f-]{36}$/

/**
 * The release's bundle directory, written first if missing.
 *
 * @example
 * const bundleDir = await materialiseRelease(db, { bundlesDir, releaseId: app.activeReleaseId })
 */
export async function materialiseRelease(db: Queryable, options: { bundlesDir: string; releaseId: string }): Promise<string> {
  if (!RELEASE_ID.test(options.releaseId)) throw new Error(`not a release id: ${options.releaseId}`)
  const root = resolve(options.bundlesDir)
  const target = join(root, options.releaseId)
  if (existsSync(target)) return target
  await mkdir(root, { recursive: true })
  const rows = await db.query<{ path: string; content: Uint8Array }>(
    'select path, content from platform.release_files where release_id = $1 order by path',
    [options.releaseId],
  )
  const staging = await mkdtemp(join(root, `.staging-${options.releaseId}-`))
  try {
    for (const row of rows) {
      const full = resolve(staging, row.path)
      // Deploy checks paths already; a path that escapes the bundle is refused again here.
      if (!full.startsWith(staging + sep)) throw new Error(`release file path escapes the bundle: ${row.path}`)
      await mkdir(dirname(full), { recursive: true })
      await writeFile(full, row.content)
    }
    try {
      await rename(staging, target)
    } catch (error) {
      // Another writer renamed its complete copy first; keep that one.
      if (!existsSync(target)) throw error
    }
  } finally {
    await rm(staging, { recursive: true, force: true })
  }
  return target
}

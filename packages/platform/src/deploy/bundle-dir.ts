/**
 * Adapter (Node file system): collects an app directory into the upload form of a bundle,
 * taking `service.yaml`, `functions/`, `public/` and `database/migrations/` only.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative, sep } from 'node:path'
import { BUNDLE_ROOTS, MANIFEST_PATH } from './bundle-files.ts'

export interface UploadFile {
  path: string
  content: string
}

function walk(root: string, dir: string, out: UploadFile[]): void {
  for (const name of readdirSync(dir).sort()) {
    if (name.startsWith('.') || name === 'node_modules') continue
    const full = join(dir, name)
    if (statSync(full).isDirectory()) walk(root, full, out)
    else out.push({ path: relative(root, full).split(sep).join('/'), content: readFileSync(full).toString('base64') })
  }
}

/** The bundle in `dir`, ready to send as `{ files }`. */
export function collectBundleDir(dir: string): { files: UploadFile[] } {
  const files: UploadFile[] = []
  const manifest = join(dir, MANIFEST_PATH)
  if (existsSync(manifest)) files.push({ path: MANIFEST_PATH, content: readFileSync(manifest).toString('base64') })
  for (const root of BUNDLE_ROOTS) {
    const full = join(dir, root)
    if (existsSync(full) && statSync(full).isDirectory()) walk(dir, full, files)
  }
  return { files }
}

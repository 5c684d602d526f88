/**
 * Which app and namespace a command acts on: `--app <slug>`, else `app.id` of the
 * `service.yaml` in the current directory; `--dev <name>` for a development namespace.
 * Builds the owner API path prefix `/v1/apps/<app>` or `/v1/apps/<app>/dev/<name>`.
 */
import { existsSync, readFileSync } from 'node:fs'
import { validateManifest } from '@service/platform/manifest'

export interface AppTarget {
  readonly app: string
  readonly dev: string | undefined
  /** `/v1/apps/<app>` or `/v1/apps/<app>/dev/<dev>`. */
  readonly prefix: string
  /** `vault (production)` or `vault (development namespace alice)`, for messages. */
  readonly label: string
}

/** The target, or a message saying how to name one. */
export function appTarget(options: { app: string | undefined; dev: string | undefined; cwd?: string }): AppTarget | string {
  let app = options.app
  if (!app) {
    const path = `${options.cwd ?? '.'}/service.yaml`
    if (!existsSync(path)) return 'name the app with --app <app>, or run this in the app directory (the one with service.yaml)'
    const { manifest } = validateManifest(readFileSync(path, 'utf8'))
    if (!manifest) return `${path} is not a valid manifest; name the app with --app <app>`
    app = manifest.app.id
  }
  const base = `/v1/apps/${encodeURIComponent(app)}`
  return {
    app,
    dev: options.dev,
    prefix: options.dev ? `${base}/dev/${encodeURIComponent(options.dev)}` : base,
    label: options.dev ? `${app} (development namespace ${options.dev})` : `${app} (production)`,
  }
}

/**
 * `service init <dir> [--private] [--app <id>] [--name <name>]`: a new app directory from
 * the template in packages/cli/templates/app: service.yaml (schema 3, the SDK pinned to the
 * platform's), a page, a Function (`addNote`), a migration (a `notes` table with row-level
 * security) and a test that deploys the app to a development namespace and calls the
 * Function there. Public by default; --private admits only the owner and people it is
 * shared with. The app id is --app, else the directory's name.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { basename, dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { SERVICE_SDK_VERSION } from '@service/server'
import { CliError, usageError } from '../errors.ts'
import { usageOf } from '../help.ts'
import type { Io } from '../io.ts'
import { printResult } from '../output.ts'

const TEMPLATE = fileURLToPath(new URL('../../templates/app/', import.meta.url))

/** The manifest's app.id rule (docs/manifest.md). */
const APP_ID = /^[a-z](?:[a-z0-9]|-(?=[a-z0-9])){1,38}[a-z0-9]$/

export interface InitOptions {
  readonly dir: string | undefined
  readonly private: boolean
  readonly app: string | undefined
  readonly name: string | undefined
}

function templateFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir).sort()) {
    const full = join(dir, name)
    if (statSync(full).isDirectory()) templateFiles(full, out)
    else out.push(relative(TEMPLATE, full))
  }
  return out
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/** `my-app` → `My App`. */
const titleOf = (id: string) => id.split('-').map((word) => word.charAt(0).toUpperCase() + word.slice(1)).join(' ')

export async function initCommand(io: Io, options: InitOptions): Promise<number> {
  const { dir } = options
  if (!dir) throw usageError('service init: name the directory to create', usageOf('init'))
  const id = options.app ?? basename(resolve(dir)).toLowerCase()
  if (!APP_ID.test(id)) {
    throw usageError(`service init: "${id}" is not an app id (3 to 40 characters: a lowercase letter, then lowercase letters,`
      + ' digits or single -, ending in a letter or digit); name it with --app <id>', usageOf('init'))
  }
  const name = options.name ?? titleOf(id)
  if (name.length === 0 || name.length > 80) throw usageError('service init: --name has 1 to 80 characters', usageOf('init'))
  if (existsSync(dir) && (!statSync(dir).isDirectory() || readdirSync(dir).length > 0)) {
    throw new CliError('INIT_DIR_NOT_EMPTY', `${dir} exists and is not an empty directory; nothing was written`, {
      next: `service init <another dir>${options.private ? ' --private' : ''}`,
    })
  }
  const visibility = options.private ? 'private' : 'public'
  const values: Record<string, { yaml: string; html: string }> = {
    id: { yaml: id, html: id },
    // JSON strings are YAML strings: a name with a colon or a quote stays one value.
    name: { yaml: JSON.stringify(name), html: escapeHtml(name) },
    visibility: { yaml: visibility, html: visibility },
    sdkVersion: { yaml: SERVICE_SDK_VERSION, html: SERVICE_SDK_VERSION },
  }
  const files = templateFiles(TEMPLATE)
  for (const file of files) {
    const kind = file.endsWith('.yaml') ? 'yaml' : file.endsWith('.html') ? 'html' : null
    let text = readFileSync(join(TEMPLATE, file), 'utf8')
    if (kind !== null) text = text.replace(/\{\{(\w+)\}\}/g, (whole, key: string) => values[key]?.[kind] ?? whole)
    const target = join(dir, file)
    mkdirSync(dirname(target), { recursive: true })
    writeFileSync(target, text, { flag: 'wx' })
  }
  const next = [
    `service validate ${dir}`,
    `service deploy ${dir}`,
    `service dev ${dir} --dev <your name>`,
    `(cd ${dir} && node --test test/)`,
  ]
  printResult(io, { dir, app: { id, name, visibility }, sdkVersion: SERVICE_SDK_VERSION, files, next }, () => {
    io.out(`created ${visibility} app ${id} in ${dir} (SDK ${SERVICE_SDK_VERSION}):`)
    for (const file of files) io.out(`  ${join(dir, file)}`)
    io.out('next:')
    io.out(`  ${next[0]}   # check it offline`)
    io.out(`  ${next[1]}   # create the app and its first release`)
    io.out(`  ${next[2]}   # your own copy: redeploys on save, streams logs`)
    io.out(`  ${next[3]}   # deploys to the development namespace "test" and calls addNote`)
  })
  return 0
}

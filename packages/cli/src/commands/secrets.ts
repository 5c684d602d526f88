/**
 * `service secrets set|list|unset`: an app's secret values (per namespace with --dev).
 * A value is read from stdin when it is piped (`printf %s "$KEY" | service secrets set KEY`;
 * one trailing newline is dropped) or typed at a hidden prompt, never from the command
 * line, where it would stay in the shell history and the process list: `--value` is
 * refused. Values are never printed; `list` shows names, whether the active release
 * declares and requires them, and when each was set.
 */
import type { Client } from '../client.ts'
import { CliError, usageError } from '../errors.ts'
import { usageOf } from '../help.ts'
import type { Io } from '../io.ts'
import { printResult } from '../output.ts'
import { appTarget } from './app-target.ts'

export interface SecretsOptions {
  readonly action: string | undefined
  readonly name: string | undefined
  readonly app: string | undefined
  readonly dev: string | undefined
  /** Set when someone passed --value, or a value after the name: refused. */
  readonly value: string | undefined
  readonly extra: readonly string[]
}

interface SecretView {
  name: string
  declared: boolean
  required: boolean
  set: boolean
  updatedAt: string | null
}

export async function secretsCommand(io: Io, client: Client, options: SecretsOptions): Promise<number> {
  const target = appTarget(options)
  if (typeof target === 'string') throw usageError(`service secrets: ${target}`, usageOf('secrets'))
  switch (options.action) {
    case 'set': {
      if (!options.name) break
      if (options.value !== undefined || options.extra.length > 0) {
        throw usageError('service secrets set: --value would leave the secret in your shell history and the process list; pipe it on stdin or type it at the prompt', usageOf('secrets'))
      }
      if (!io.readSecret) throw usageError('service secrets set: no terminal or stdin to read the value from', usageOf('secrets'))
      const value = await io.readSecret(`value for ${options.name} (input hidden): `)
      if (value.length === 0) {
        throw new CliError('SECRET_VALUE_EMPTY', 'the value is empty; nothing was set', { next: `service secrets unset ${options.name} (to remove a secret)` })
      }
      const { secret } = await client.call<{ secret: SecretView }>('PUT', `${target.prefix}/secrets/${encodeURIComponent(options.name)}`, { value })
      printResult(io, { secret }, () => io.out(`set ${secret.name} for ${target.label}`))
      if (!secret.declared) io.err(`note: the active release of ${target.label} does not declare ${secret.name} under secrets:, so Functions cannot read it yet`)
      return 0
    }
    case 'list': {
      const { secrets } = await client.call<{ secrets: SecretView[] }>('GET', `${target.prefix}/secrets`)
      const missing = secrets.filter((secret) => secret.required && !secret.set)
      if (missing.length > 0) io.err(`warning: ${missing.map((secret) => secret.name).join(', ')} required but not set; set with: service secrets set <NAME>`)
      if (io.json === true) {
        printResult(io, { secrets }, () => {})
        return 0
      }
      if (secrets.length === 0) {
        io.out(`no secrets declared or set for ${target.label}`)
        return 0
      }
      const width = Math.max(4, ...secrets.map((secret) => secret.name.length))
      io.out(`${'NAME'.padEnd(width)}  DECLARED  SET  UPDATED`)
      for (const secret of secrets) {
        const declared = secret.declared ? (secret.required ? 'required' : 'yes') : 'no'
        io.out(`${secret.name.padEnd(width)}  ${declared.padEnd(8)}  ${(secret.set ? 'yes' : 'no').padEnd(3)}  ${secret.updatedAt ?? '-'}`)
      }
      return 0
    }
    case 'unset': {
      if (!options.name) break
      await client.call('DELETE', `${target.prefix}/secrets/${encodeURIComponent(options.name)}`)
      printResult(io, { removed: options.name }, () => io.out(`removed ${options.name} from ${target.label}`))
      return 0
    }
  }
  throw usageError('service secrets: set <NAME>, list or unset <NAME>', usageOf('secrets'))
}

/**
 * Reads a secret from the process: all of stdin when it is piped (one trailing newline
 * dropped), else a line typed at a hidden prompt on the terminal.
 */
export async function readSecretFromProcess(prompt: string): Promise<string> {
  const stdin = process.stdin
  if (!stdin.isTTY) {
    const chunks: Buffer[] = []
    for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk)
    return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '')
  }
  process.stderr.write(prompt)
  stdin.setRawMode(true)
  stdin.setEncoding('utf8')
  stdin.resume()
  return await new Promise<string>((resolve, reject) => {
    let value = ''
    const finish = () => {
      stdin.off('data', onData)
      stdin.setRawMode(false)
      stdin.pause()
      process.stderr.write('\n')
    }
    const onData = (chunk: string) => {
      for (const char of chunk) {
        if (char === '\r' || char === '\n' || char === '\u0004') {
          finish()
          resolve(value)
          return
        }
        if (char === '\u0003') {
          finish()
          reject(new Error('cancelled'))
          return
        }
        if (char === '\u007f' || char === '\b') value = value.slice(0, -1)
        else value += char
      }
    }
    stdin.on('data', onData)
  })
}

/**
 * `service secrets set|list|unset`: an app's secret values (per namespace with --dev).
 * A value is read from stdin when it is piped (`printf %s "$KEY" | service secrets set KEY`;
 * one trailing newline is dropped) or typed at a hidden prompt, never from the command
 * line, where it would stay in the shell history and the process list: `--value` is
 * refused. Values are never printed; `list` shows names, whether the active release
 * declares and requires them, and when each was set.
 */
import type { Client } from '../client.ts'
import type { Io } from '../io.ts'
import { appTarget } from './app-target.ts'

export interface SecretsOptions {
  readonly action: string | undefined
  readonly name: string | undefined
  readonly app: string | undefined
  readonly dev: string | undefined
  /** Set when someone passed --value, or a value after the name: refused. */
  readonly value: string | undefined
  readonly extra: readonly string[]
  readonly json: boolean
}

interface SecretView {
  name: string
  declared: boolean
  required: boolean
  set: boolean
  updatedAt: string | null
}

const USAGE = 'usage: service secrets set <NAME> | list | unset <NAME> [--app <app>] [--dev <name>]'

export async function secretsCommand(io: Io, client: Client, options: SecretsOptions): Promise<number> {
  const target = appTarget(options)
  if (typeof target === 'string') {
    io.err(`service secrets: ${target}`)
    return 2
  }
  switch (options.action) {
    case 'set': {
      if (!options.name) break
      if (options.value !== undefined || options.extra.length > 0) {
        io.err('service secrets set: --value would leave the secret in your shell history and the process list; pipe it on stdin or type it at the prompt')
        return 2
      }
      if (!io.readSecret) {
        io.err('service secrets set: no terminal or stdin to read the value from')
        return 2
      }
      const value = await io.readSecret(`value for ${options.name} (input hidden): `)
      if (value.length === 0) {
        io.err('service secrets set: the value is empty; nothing was set (remove a secret with service secrets unset)')
        return 1
      }
      const { secret } = await client.call<{ secret: SecretView }>('PUT', `${target.prefix}/secrets/${encodeURIComponent(options.name)}`, { value })
      io.out(`set ${secret.name} for ${target.label}`)
      if (!secret.declared) io.err(`note: the active release of ${target.label} does not declare ${secret.name} under secrets:, so Functions cannot read it yet`)
      return 0
    }
    case 'list': {
      const { secrets } = await client.call<{ secrets: SecretView[] }>('GET', `${target.prefix}/secrets`)
      if (options.json) {
        io.out(JSON.stringify(secrets, null, 2))
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
      const missing = secrets.filter((secret) => secret.required && !secret.set)
      if (missing.length > 0) io.err(`warning: ${missing.map((secret) => secret.name).join(', ')} required but not set; set with: service secrets set <NAME>`)
      return 0
    }
    case 'unset': {
      if (!options.name) break
      await client.call('DELETE', `${target.prefix}/secrets/${encodeURIComponent(options.name)}`)
      io.out(`removed ${options.name} from ${target.label}`)
      return 0
    }
  }
  io.err(USAGE)
  return 2
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

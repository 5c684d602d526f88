// Every command in README.md's ```sh blocks runs as written, in order, and exits 0 (issue
// 11). The test plays the new user: a fresh directory with the repository's package.json,
// packages/, examples/ and node_modules/ (installed already: `npm install` is not run again),
// `npm start` on a free PORT (so the CLI must find the platform through ./.service/url, not
// the default port), then each command through bash with the environment the README tells
// the user to set (SERVICE_TOKEN pasted from create-user's output, STRIPE_KEY given a
// value). No SERVICE_URL, SERVICE_DATA_DIR or SERVICE_OPERATOR_KEY is set. Skipped, by name:
// `npm test` (this suite), commands marked `# needs a browser` and those marked `# until
// Ctrl-C` (service dev, logs --follow: their own tests cover them). PGlite, or a fresh
// database on DATABASE_URL's server.
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { request } from 'node:http'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { after, before, describe, test } from 'node:test'
import { backend, createTestDb, type TestDb } from '../../platform/test/test-db.ts'

const REPO = fileURLToPath(new URL('../../../', import.meta.url))
const README = readFileSync(join(REPO, 'README.md'), 'utf8')
const STRIPE_KEY = 'sk_test_readme_5f1e2d3c'
const NEEDS_A_BROWSER = /#.*\bneeds a browser\b/
/** Commands that run until Ctrl-C (`service dev`, `logs --follow`): shown, not run here (packages/cli tests them). */
const UNTIL_CTRL_C = /#.*\buntil Ctrl-C\b/

interface ReadmeCommand {
  /** The command as the README writes it, heredoc lines included. */
  readonly text: string
  /** Its first line without the trailing comment, to name and match it. */
  readonly code: string
  /** 1-based line in README.md. */
  readonly line: number
}

/** The text before an unquoted `#` that starts a comment (bash's rule: `#` after a blank). */
function withoutComment(line: string): string {
  let quote: string | null = null
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!
    if (quote) {
      if (c === quote) quote = null
    } else if (c === "'" || c === '"') quote = c
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]!))) return line.slice(0, i).trimEnd()
  }
  return line.trimEnd()
}

/** The commands of every ```sh block, in order: comment-only lines dropped, heredocs and `\` continuations kept whole. */
function readmeCommands(markdown: string): ReadmeCommand[] {
  const lines = markdown.split('\n')
  const commands: ReadmeCommand[] = []
  let inSh = false
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    if (!inSh) {
      inSh = line.trim() === '```sh'
      continue
    }
    if (line.trim() === '```') {
      inSh = false
      continue
    }
    const code = withoutComment(line)
    if (code === '') continue
    const start = i
    const text = [line]
    let last = code
    while (last.endsWith('\\') && i + 1 < lines.length) {
      last = withoutComment(lines[++i]!)
      text.push(lines[i]!)
    }
    const heredoc = /<<-?\s*(['"]?)(\w+)\1/.exec(code)
    if (heredoc) {
      while (i + 1 < lines.length && lines[i]!.trim() !== heredoc[2]) text.push(lines[++i]!)
      assert.equal(lines[i]!.trim(), heredoc[2], `README.md:${start + 1}: the heredoc is not closed by ${heredoc[2]}`)
    }
    commands.push({ text: text.join('\n'), code, line: start + 1 })
  }
  assert.ok(!inSh, 'a ```sh block in README.md is not closed')
  return commands
}

/**
 * What the key commands print, by the command's exact text (comment left out). Each must be
 * in the README once, so a README that drops or changes one fails here.
 */
const EXPECTED: readonly { command: string; out?: RegExp; err?: RegExp; absent?: string }[] = [
  { command: 'npx service operator create-user --email you@example.com --company "Your company"', out: /^svc_owner_\S+$/m },
  { command: 'npx service validate examples/tasks', out: /: valid \(app tasks,/ },
  { command: 'npx service init notes', out: /^created public app notes in notes \(SDK \d+\.\d+\.\d+\):\n(?: {2}notes\/\S+\n){6}next:/ },
  { command: 'npx service deploy ./notes', out: /^deployed notes release 1: http:\/\/notes\.localhost:\d+$/m, err: /^uploading 5 files \([\d.]+ KiB\) to notes \(production\)\.\.\.\napplied migration 0001_notes\.sql$/m },
  { command: '(cd notes && node --test test/)', out: /^# pass 2$/m },
  { command: 'npx service jobs list --app my-app', out: /^no jobs created in my-app \(production\) from /m },
  { command: 'npx service validate ./my-app', out: /: valid \(app my-app, 3 files/ },
  { command: 'npx service deploy ./my-app', out: /^deployed my-app release 1: http:\/\/my-app\.localhost:\d+$/m, err: /^created app my-app\nuploading 3 files \([\d.]+ (B|KiB)\) to my-app \(production\)\.\.\.\nno new migrations\n.*SECRET_NOT_SET warning: the required secret STRIPE_KEY has no value in production/m },
  { command: 'npx service apps list', out: /^my-app\s+public\s+active\s+http:\/\/my-app\.localhost:\d+$/m },
  { command: 'npx service releases list my-app', out: /^\s+1 active/m },
  { command: 'npx service app access-token create my-app', out: /^created access token \S+ .* for my-app\n.*\nhttp:\/\/\S+$/m, absent: 'svc_app_' },
  { command: 'npx service cron next "30 2 * * *" --tz Europe/Berlin --from 2026-03-28T12:00Z --count 2', out: /^2026-03-29T03:00:00\+02:00\n2026-03-30T02:30:00\+02:00\n$/ },
  { command: 'printf %s "$STRIPE_KEY" | npx service secrets set STRIPE_KEY --app my-app', out: /^set STRIPE_KEY for my-app \(production\)$/m },
  { command: 'npx service secrets list --app my-app', out: /^STRIPE_KEY\s+required\s+yes\s+\d{4}-/m, absent: STRIPE_KEY },
  { command: 'npx service deploy ./my-app --dev alice', out: /^deployed my-app release 1 to development namespace alice/m, err: /STRIPE_KEY has no value in the development namespace alice/ },
  { command: 'printf %s "$STRIPE_KEY" | npx service secrets set STRIPE_KEY --app my-app --dev alice', out: /^set STRIPE_KEY for my-app \(development namespace alice\)$/m },
  { command: `npx service functions invoke hello --app my-app --dev alice --input '{"name":"Ada"}'`, out: new RegExp(`"greeting": "Hello, Ada",\\n\\s+"keyLength": ${STRIPE_KEY.length}`), absent: STRIPE_KEY },
  { command: '(cd my-app && npx service logs --dev alice --level warn)', out: /warn\s+hello hello called \{(?=.*"name":"Ada")(?=.*"key":"\[REDACTED\]").*\}$/m, absent: STRIPE_KEY },
  { command: 'npx service dev delete alice --app my-app --yes', out: /^deleted my-app \(development namespace alice\)/m },
]

const commands = readmeCommands(README)

/** A loopback port nothing listens on (bound, then released). */
async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** Whether any process of the group led by `pid` is alive. */
function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0)
    return true
  } catch {
    return false
  }
}

async function stopGroup(pid: number): Promise<void> {
  if (!groupAlive(pid)) return
  process.kill(-pid, 'SIGINT')
  // The platform's own shutdown is bounded (about 40 s at most); then it is killed.
  for (let waited = 0; groupAlive(pid); waited += 100) {
    if (waited === 60_000) process.kill(-pid, 'SIGKILL')
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

function run(command: string, options: { cwd: string; env: Record<string, string> }): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn('bash', ['-o', 'pipefail', '-c', command], { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk))
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out, err })))
}

/** GET on an app's origin through the loopback address, with the Host a browser would send. */
function getApp(port: number, options: { slug: string; accept: string }): Promise<{ status: number; location: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', headers: { host: `${options.slug}.localhost:${port}`, accept: options.accept } }, (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk))
      res.on('end', () => resolve({ status: res.statusCode!, location: res.headers.location, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

describe('readmeCommands', () => {
  test('takes ```sh blocks only, drops comment lines, keeps heredocs and continuations whole', () => {
    const markdown = [
      '```yaml', 'a: 1', '```',
      '```sh',
      '# a comment', 'echo one   # trailing', 'echo "#not a comment" \\', '  two',
      "cat > f <<'EOF'", '# inside the heredoc', 'EOF',
      '```',
    ].join('\n')
    assert.deepEqual(readmeCommands(markdown), [
      { text: 'echo one   # trailing', code: 'echo one', line: 6 },
      { text: 'echo "#not a comment" \\\n  two', code: 'echo "#not a comment" \\', line: 7 },
      { text: "cat > f <<'EOF'\n# inside the heredoc\nEOF", code: "cat > f <<'EOF'", line: 9 },
    ])
  })

  test('the README keeps its two commands to run and test the platform', () => {
    assert.equal(commands[0]?.code, 'npm install && npm start')
    assert.equal(commands[1]?.code, 'npm test')
  })
})

describe(`every command in README.md runs as written, in order (${backend})`, () => {
  let root: string
  let database: TestDb | undefined
  let platform: ChildProcess | undefined
  let platformOutput = ''
  let port: number
  const env: Record<string, string> = {}

  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'svc-readme-'))
    for (const name of ['packages', 'examples', 'node_modules']) symlinkSync(join(REPO, name), join(root, name))
    cpSync(join(REPO, 'package.json'), join(root, 'package.json'))
    for (const [name, value] of Object.entries(process.env)) {
      // A fresh shell's: none of the platform's settings, nor what npm and the test runner set.
      if (value !== undefined && !/^(SERVICE_|DATABASE_URL$|PORT$|npm_|INIT_CWD$|NODE_TEST_CONTEXT$)/i.test(name)) env[name] = value
    }
    env.STRIPE_KEY = STRIPE_KEY
    // The OS credential store is never touched (login is skipped; this only guards a slip).
    env.SERVICE_CREDENTIALS_FILE = join(root, 'credentials.json')
    port = await freePort()
    assert.notEqual(port, 8787)
    if (backend === 'postgres') database = await createTestDb()
  })

  after(async () => {
    // Ctrl-C's signal to npm, tsx and the platform alike; then wait until all of them are gone.
    if (platform) await stopGroup(platform.pid!)
    await database?.cleanup()
    rmSync(root, { recursive: true, force: true })
  })

  /** `npm start` in the background, as the person leaves it running in another terminal. */
  async function startPlatform(command: string) {
    assert.equal(command, 'npm install && npm start', 'the README starts the platform with npm install && npm start')
    const childEnv: Record<string, string> = { ...env, PORT: String(port), ...(database?.url ? { DATABASE_URL: database.url } : {}) }
    delete childEnv.SERVICE_CREDENTIALS_FILE
    platform = spawn('npm', ['start'], { cwd: root, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    platform.stdout!.setEncoding('utf8').on('data', (chunk: string) => (platformOutput += chunk))
    platform.stderr!.setEncoding('utf8').on('data', (chunk: string) => (platformOutput += chunk))
    const urlFile = join(root, '.service', 'url')
    for (let waited = 0; !existsSync(urlFile); waited += 100) {
      assert.equal(platform.exitCode, null, `npm start exited:\n${platformOutput}`)
      assert.ok(waited < 180_000, `the platform did not record its URL:\n${platformOutput}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    assert.equal(readFileSync(urlFile, 'utf8'), `http://localhost:${port}\n`)
  }

  test('each command exits 0 and prints what the README says', async () => {
    const seen = new Map<string, number>()
    let token: string | undefined
    for (const command of commands) {
      const where = `README.md:${command.line} ${command.code}`
      if (command.code === 'npm test' || NEEDS_A_BROWSER.test(command.text) || UNTIL_CTRL_C.test(command.text)) continue
      if (command.code.startsWith('npm install')) {
        await startPlatform(command.code)
        continue
      }
      const exported = /^export (\w+)=(\S+)$/.exec(command.code)
      if (exported) {
        // The person pastes the token create-user printed in place of the placeholder.
        assert.ok(token, `${where}: no token was printed before`)
        const value = exported[2]!.replace('svc_owner_…', token)
        assert.ok(!value.includes('…'), `${where}: a placeholder the test cannot fill`)
        env[exported[1]!] = value
        continue
      }
      assert.ok(!command.text.includes('…'), `${where}: a placeholder the test cannot fill`)
      assert.ok(platform, `${where}: runs before the platform is started`)
      const result = await run(command.text, { cwd: root, env })
      const shown = `${where}\nexit ${result.code}\nstdout:\n${result.out}\nstderr:\n${result.err}\nplatform:\n${platformOutput}`
      assert.equal(result.code, 0, shown)
      for (const expected of EXPECTED.filter((e) => e.command === command.code)) {
        seen.set(expected.command, (seen.get(expected.command) ?? 0) + 1)
        if (expected.out) assert.match(result.out, expected.out, shown)
        if (expected.err) assert.match(result.err, expected.err, shown)
        if (expected.absent) assert.ok(!(result.out + result.err).includes(expected.absent), `${where} printed ${expected.absent}`)
      }
      token ??= /^svc_owner_\S+$/m.exec(result.out)?.[0]
    }
    for (const expected of EXPECTED) assert.equal(seen.get(expected.command), 1, `README.md runs ${expected.command} once`)
    assert.ok(env.SERVICE_TOKEN?.startsWith('svc_owner_'), 'the README has the person export SERVICE_TOKEN')
  })

  test('the tour says how the private example app answers: a redirect for a browser page, 401 JSON otherwise', async () => {
    assert.ok(platform, 'the platform runs')
    const page = await getApp(port, { slug: 'tasks', accept: 'text/html,application/xhtml+xml' })
    assert.equal(page.status, 302)
    assert.match(page.location ?? '', /^http:\/\/auth\.localhost:\d+\/authorize\?app=tasks&/)
    const api = await getApp(port, { slug: 'tasks', accept: '*/*' })
    assert.equal(api.status, 401)
    assert.equal((JSON.parse(api.body) as { error: { code: string } }).error.code, 'AUTH_REQUIRED')
    assert.match(README, /a browser \(a `GET` or\n`HEAD` that accepts `text\/html`\) is redirected to the central sign-in; any other client,\nsuch as `fetch` or `curl`, gets `401`/)
  })

  test('the owner created in the tour does not see the example app, as the tour says', async () => {
    assert.ok(env.SERVICE_TOKEN, 'the tour ran')
    const result = await run('npx service releases list tasks', { cwd: root, env })
    assert.equal(result.code, 1)
    assert.match(result.err, /^error APP_NOT_FOUND/m)
    assert.match(README, /The example apps belong to `admin@localhost`/)
  })
})

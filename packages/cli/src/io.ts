/**
 * What a CLI command reads and prints through: its output and error lines, the environment,
 * and the terminal prompts it may need. `main.ts` passes the process's own; tests pass one
 * that captures lines. Commands import this type from here, not from `main.ts`, which
 * imports the commands.
 */
export interface Io {
  out(line: string): void
  err(line: string): void
  env: Record<string, string | undefined>
  /** Reads a secret value: piped stdin, else a hidden prompt (never the command line). */
  readSecret?(prompt: string): Promise<string>
  /** Asks a yes/no question; absent without a terminal (then a command needs `--yes`). */
  confirm?(question: string): Promise<boolean>
  /** `--json`: print results as JSON (output.ts). */
  readonly json?: boolean
  /** Stops a long-running command (`dev`, `logs --follow`): Ctrl-C for the process, the test's own in tests. */
  readonly signal?: AbortSignal
}

/**
 * A yes/no question on the terminal, for commands that destroy data. Only offered when
 * stdin is a terminal; without one the command asks for `--yes` instead of guessing.
 */
import { createInterface } from 'node:readline'

/** Asks on stderr and reads one line from stdin: true only for y or yes; Ctrl-C or Ctrl-D mean no. */
export function confirmOnTerminal(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr })
  return new Promise((resolve) => {
    let answered = false
    rl.on('SIGINT', () => {
      process.stderr.write('\n')
      rl.close()
    })
    rl.on('close', () => {
      if (!answered) resolve(false)
    })
    rl.question(`${question} [y/N] `, (answer) => {
      answered = true
      rl.close()
      resolve(/^(y|yes)$/i.test(answer.trim()))
    })
  })
}

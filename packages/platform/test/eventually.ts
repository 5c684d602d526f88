import assert from 'node:assert/strict'

/** Polls `check` every 20 ms until it holds; fails the test naming `what` after `withinMs`. */
export async function eventually(check: () => Promise<boolean>, what: string, withinMs = 5_000): Promise<void> {
  for (const end = Date.now() + withinMs; Date.now() < end;) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  assert.fail(`never happened: ${what}`)
}

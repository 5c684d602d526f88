// The error thrown while a Function module is being loaded: a `defineFunction` call or a
// schema helper was given something it cannot accept. It is thrown at import time, so
// the platform reports it when the release is deployed, not on the first call.

/**
 * A Function definition (or one of its input schemas) is malformed. `problems` lists
 * every problem found; `message` joins them into one sentence a person can act on.
 *
 * @example
 * try {
 *   defineFunction({ handler: () => 1 } as never)
 * } catch (error) {
 *   if (error instanceof FunctionDefinitionError) console.error(error.problems)
 * }
 */
export class FunctionDefinitionError extends Error {
  override readonly name = 'FunctionDefinitionError'
  readonly problems: readonly string[]

  constructor(message: string, problems: readonly string[] = [message]) {
    super(message)
    this.problems = Object.freeze([...problems])
  }
}

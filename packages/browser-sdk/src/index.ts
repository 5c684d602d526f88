/**
 * The browser SDK's source, served by the platform at {app_url}/_service/sdk.js. The stored
 * source (`BROWSER_SDK_SOURCE`) leaves every Function name to the platform to refuse; the
 * platform serves each app release `renderBrowserSdk`'s output, which carries the names of
 * the Functions a browser may call, so the SDK refuses the others itself (spec 4.2).
 */
import { readFileSync } from 'node:fs'

export const BROWSER_SDK_SOURCE: string = readFileSync(new URL('./sdk.js', import.meta.url), 'utf8')

/**
 * The push service worker (`service.notifications.subscribe()` registers it), served by the
 * platform at {app_url}/_service/push/sw.js as it is stored.
 */
export const PUSH_SERVICE_WORKER_SOURCE: string = readFileSync(new URL('./push-sw.js', import.meta.url), 'utf8')

/** Where sdk.js takes the callable Functions' names (an array expression in place of `null`). */
const CALLABLE_FUNCTIONS_SLOT = '/*@service:callable-functions*/null'

/**
 * The SDK with the names of the Functions a browser may call written in.
 * `callableFunctions` is a JavaScript array expression of strings, encoded by the caller to
 * be safe in a script (the platform passes `scriptJson(names)`).
 *
 * @example
 * const source = renderBrowserSdk({ callableFunctions: scriptJson(['listTasks', 'addTask']) })
 */
export function renderBrowserSdk(options: { callableFunctions: string }): string {
  const at = BROWSER_SDK_SOURCE.indexOf(CALLABLE_FUNCTIONS_SLOT)
  if (at === -1 || BROWSER_SDK_SOURCE.indexOf(CALLABLE_FUNCTIONS_SLOT, at + 1) !== -1) {
    throw new Error('sdk.js must hold the callable-functions slot exactly once')
  }
  return BROWSER_SDK_SOURCE.slice(0, at) + options.callableFunctions + BROWSER_SDK_SOURCE.slice(at + CALLABLE_FUNCTIONS_SLOT.length)
}

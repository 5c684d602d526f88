/** The browser SDK's source, served by the platform at {app_url}/_service/sdk.js. */
import { readFileSync } from 'node:fs'

export const BROWSER_SDK_SOURCE: string = readFileSync(new URL('./sdk.js', import.meta.url), 'utf8')
